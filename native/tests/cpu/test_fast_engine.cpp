// The fast path through the engine (cpu/fast/): its line-search losses,
// its agreement with the reference-order path, its solve routes, the
// automatic choice, and its results across thread counts.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include "core/diagnostics.hpp"
#include "cpu/engine.hpp"
#include "cpu/kernel_choice.hpp"
#include "cpu/kernels/fast_kernels.hpp"
#include "test_fixtures.hpp"

using namespace rh;
using rh::test::Batch;
using rh::test::linear_batch;
using rh::test::OwnedState;
using rh::test::update_into;

using Dtypes = ::testing::Types<float, double>;

// A line-search batch sums every step's losses exactly as a single step's
// pass does (so batching the halvings or doublings cannot change which t is
// taken), and
// both match the direct sum.
template <class T>
class FastLineSearch : public ::testing::Test {};
TYPED_TEST_SUITE(FastLineSearch, Dtypes);

TYPED_TEST(FastLineSearch, BatchedStepLossesEqualSingleStepLossesBitForBit) {
    using T = TypeParam;
    std::mt19937 rng(17);
    std::normal_distribution<double> normal;
    std::uniform_real_distribution<double> uniform(0.0, 2.0);
    const T tau = T(1.345);
    for (std::int64_t n : {1, 7, 16, 17, 511, 512, 513, 1000, 4096}) {
        std::vector<T> r(n), dz(n), w(n);
        for (std::int64_t i = 0; i < n; ++i) {
            r[i] = T(2.0 * normal(rng));
            dz[i] = T(normal(rng));
            w[i] = i % 5 == 2 ? T(0) : T(uniform(rng));
        }
        // The halvings, and the majorizer's doublings (core::SearchSteps).
        const T halvings[cpu::fast::kStepBatch] = {T(0.5), T(0.25), T(0.125), T(0.0625)};
        const T doublings[cpu::fast::kStepBatch] = {T(2), T(4), T(8), T(16)};
        for (const T* steps : {halvings, doublings})
        for (int count = 1; count <= cpu::fast::kStepBatch; ++count) {
            double batch[cpu::fast::kStepBatch];
            cpu::fast::loss_sums(n, r.data(), dz.data(), steps, count, w.data(), tau, batch);
            for (int k = 0; k < count; ++k) {
                const double single = cpu::fast::loss_sum(n, r.data(), dz.data(), steps[k], w.data(), tau);
                ASSERT_EQ(batch[k], single) << "n=" << n << " count=" << count << " step " << k;
                double exact = 0.0, magnitude = 0.0;
                for (std::int64_t i = 0; i < n; ++i) {
                    const double ri = double(r[i] + steps[k] * dz[i]), a = std::fabs(ri);
                    const double loss = a <= double(tau) ? 0.5 * ri * ri : double(tau) * a - 0.5 * double(tau) * double(tau);
                    exact += double(w[i]) * loss;
                    magnitude += std::fabs(double(w[i]) * loss);
                }
                const double eps = double(std::numeric_limits<T>::epsilon());
                EXPECT_NEAR(single, exact, eps * (double(n) / 16.0 + 1040.0) * (magnitude + 1.0))
                    << "n=" << n << " step " << k;
            }
        }
    }
}

template <class T>
class FastEngine : public ::testing::Test {};
TYPED_TEST_SUITE(FastEngine, Dtypes);

TYPED_TEST(FastEngine, AgreesWithTheReferenceOrderPathAndUsesCholesky) {
    using T = TypeParam;
    const double tolerance = std::is_same_v<T, double> ? 1e-8 : 2e-4;
    for (auto penalty : {core::Penalty::none, core::Penalty::l1}) {
        core::SolverConfig config;
        config.penalty = penalty;
        config.tol = std::is_same_v<T, double> ? 1e-10 : 1e-5;
        cpu::Engine<T> fast(1, cpu::KernelChoice::fast), reference(1, cpu::KernelChoice::reference_order);
        OwnedState<T> a0(5, true), a1(5, true), a2(5, true), b0(5, true), b1(5, true), b2(5, true);
        const auto first = linear_batch<T>(2000, 5, 1), second = linear_batch<T>(2000, 5, 2);
        const auto d1 = update_into(fast, a0, first, config, a1);
        update_into(reference, b0, first, config, b1);
        const auto d2 = update_into(fast, a1, second, config, a2);
        update_into(reference, b1, second, config, b2);
        EXPECT_EQ(d1.kernel_path, cpu::KernelPath::fast);
        EXPECT_EQ(d2.kernel_path, cpu::KernelPath::fast);
        if (penalty == core::Penalty::none) {
            EXPECT_EQ(d2.solve_route, core::SolveRoute::cholesky);
            EXPECT_GT(d2.cholesky_solves, 0);
        }
        for (int j = 0; j < 6; ++j)
            EXPECT_NEAR(a2.coefficients[j], b2.coefficients[j], tolerance * (1 + std::fabs(b2.coefficients[j])));
        for (int k = 0; k < 36; ++k)
            EXPECT_NEAR(a2.information[k], b2.information[k], tolerance * 10 * (1 + std::fabs(b2.information[k])));
    }
}

TEST(FastEngineRoutes, NumericallySingularSystemTakesTheMinimumNormRoute) {
    cpu::Engine<double> engine(1, cpu::KernelChoice::fast);
    Batch<double> batch = linear_batch<double>(300, 3);
    for (std::int64_t i = 0; i < 300; ++i) batch.X[i * 3 + 2] = batch.X[i * 3 + 1];
    core::SolverConfig config;
    config.tau = 100.0;
    config.ridge = 0.0;
    OwnedState<double> empty(3, true), next(3, true);
    const auto diagnostics = update_into(engine, empty, batch, config, next);
    EXPECT_EQ(diagnostics.solve_route, core::SolveRoute::least_squares);
    EXPECT_NEAR(next.coefficients[1], next.coefficients[2], 1e-10);
}

TEST(FastEngineRoutes, AutomaticChoiceFollowsTheThreshold) {
    EXPECT_EQ(cpu::kFastKernelThreshold, std::int64_t{1} << 18);
    EXPECT_EQ(cpu::choose_kernel_path(cpu::KernelChoice::automatic, 900, 17), cpu::KernelPath::reference_order);
    EXPECT_EQ(cpu::choose_kernel_path(cpu::KernelChoice::automatic, 1000, 17), cpu::KernelPath::fast);
    EXPECT_EQ(cpu::choose_kernel_path(cpu::KernelChoice::reference_order, 1 << 20, 91),
              cpu::KernelPath::reference_order);
    EXPECT_EQ(cpu::choose_kernel_path(cpu::KernelChoice::fast, 10, 2), cpu::KernelPath::fast);
}

TEST(FastEngineThreads, TwoThreadsGiveTheOneThreadResultWithinRounding) {
    const auto batch = linear_batch<double>(40000, 8, 5);  // above every split threshold
    for (auto penalty : {core::Penalty::none, core::Penalty::l1}) {
        core::SolverConfig config;
        config.penalty = penalty;
        cpu::Engine<double> one(1, cpu::KernelChoice::fast), two(2, cpu::KernelChoice::fast);
        OwnedState<double> empty(8, true), a(8, true), b(8, true);
        update_into(one, empty, batch, config, a);
        update_into(two, empty, batch, config, b);
        EXPECT_EQ(one.started_workers(), 0);
        EXPECT_EQ(two.started_workers(), 1);
        for (int j = 0; j < 9; ++j) EXPECT_NEAR(a.coefficients[j], b.coefficients[j], 1e-9);
        for (int k = 0; k < 81; ++k) EXPECT_NEAR(a.information[k], b.information[k], 1e-9 * (1 + std::fabs(b.information[k])));
    }
}


// More parts than cores (3 and 4 threads on a 2-core machine): the result
// is bit for bit the same whether the workers or the caller ran the parts,
// since the partition and the order in which parts are added are fixed by
// the thread count alone.
TEST(FastEngineThreads, MorePartsThanCoresGiveTheSameBitsWhoeverRunsThem) {
    for (auto penalty : {core::Penalty::none, core::Penalty::l1})
        for (int threads : {3, 4}) {
            const auto batch = linear_batch<double>(40000, 8, 5);
            core::SolverConfig config;
            config.penalty = penalty;
            cpu::Engine<double> pooled(threads, cpu::KernelChoice::fast), serial(threads, cpu::KernelChoice::fast);
            serial.fast_options().serial_parts = true;
            OwnedState<double> empty(8, true), a(8, true), b(8, true);
            const auto da = update_into(pooled, empty, batch, config, a);
            const auto db = update_into(serial, empty, batch, config, b);
            EXPECT_GT(da.parallel_dispatches, 0) << "nothing was split";
            EXPECT_EQ(a.coefficients, b.coefficients) << threads << " threads";
            EXPECT_EQ(a.information, b.information) << threads << " threads";
            EXPECT_EQ(da.iterations, db.iterations);
            EXPECT_EQ(da.objective, db.objective);
        }
}

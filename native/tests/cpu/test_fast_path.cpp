// The fast kernel path (cpu/fast_path.hpp): incremental Gram, solve ladder,
// agreement with the reference-order path, automatic choice, worker pool.
#include <gtest/gtest.h>

#include <atomic>
#include <cmath>
#include <limits>
#include <random>
#include <chrono>
#include <thread>
#if defined(__linux__)
#include <sched.h>
#endif
#include <vector>

#include "core/diagnostics.hpp"
#include "cpu/engine.hpp"
#include "cpu/fast_lamm.hpp"
#include "cpu/fast_path.hpp"
#include "cpu/kernel_choice.hpp"
#include "cpu/worker_pool.hpp"
#include "test_fixtures.hpp"

using namespace rh;
using rh::test::Batch;
using rh::test::linear_batch;
using rh::test::OwnedState;
using rh::test::update_into;

namespace {

template <class T>
struct GramFixture {
    std::int64_t n, p, d;
    std::vector<T> X, y, w;
    cpu::Workspace<T> ws;
    cpu::WorkerPool pool;
    cpu::fast::Problem<T> problem;

    GramFixture(std::int64_t rows, std::int64_t features, int threads)
        : n(rows), p(features), d(features + 1), X(rows * features), y(rows, T(0)), w(rows, T(1)) {
        std::mt19937_64 rng(3);
        std::normal_distribution<double> normal;
        for (auto& v : X) v = T(normal(rng));
        ws.reserve(n, d, false, false, threads);
        problem.rows = n;
        problem.features = p;
        problem.d = d;
        problem.intercept = true;
        problem.X = X.data();
        problem.y = y.data();
        problem.w = w.data();
        problem.ws = &ws;
        problem.pool = &pool;
        problem.threads = threads;
    }

    // Z' diag(c) Z in double, directly.
    std::vector<double> exact(const std::vector<T>& c) const {
        std::vector<double> G(d * d, 0.0);
        for (std::int64_t i = 0; i < n; ++i)
            for (std::int64_t j = 0; j < d; ++j)
                for (std::int64_t k = 0; k < d; ++k) {
                    const double zj = j < p ? double(X[i * p + j]) : 1.0, zk = k < p ? double(X[i * p + k]) : 1.0;
                    G[j * d + k] += double(c[i]) * zj * zk;
                }
        return G;
    }
};

template <class T>
double max_relative_upper_error(const std::vector<T>& G, const std::vector<double>& exact, std::int64_t d) {
    double scale = 0, error = 0;
    for (std::int64_t j = 0; j < d; ++j)
        for (std::int64_t k = j; k < d; ++k) {
            scale = std::max(scale, std::fabs(exact[j * d + k]));
            error = std::max(error, std::fabs(double(G[j * d + k]) - exact[j * d + k]));
        }
    return error / scale;
}

}  // namespace

template <class T>
class FastGram : public ::testing::Test {};
using Dtypes = ::testing::Types<float, double>;
TYPED_TEST_SUITE(FastGram, Dtypes);

TYPED_TEST(FastGram, IncrementalUpdatesEqualAFullRecomputeWithinRounding) {
    using T = TypeParam;
    const double tolerance = std::is_same_v<T, double> ? 1e-13 : 2e-5;
    for (int threads : {1, 2}) {
        GramFixture<T> f(5000, 12, threads);
        core::UpdateDiagnostics diagnostics;
        cpu::fast::Gram<T> gram(f.problem);
        std::mt19937_64 rng(9);
        std::uniform_real_distribution<double> uniform(0.0, 1.0);
        std::vector<T> c(f.n);
        for (auto& v : c) v = uniform(rng) < 0.2 ? T(0) : T(1);  // kappa is 0 or 1 for most rows
        // First refresh: full.
        std::copy(c.begin(), c.end(), f.ws.curvature.begin());
        gram.refresh({0.0, f.n, f.n}, diagnostics);
        EXPECT_EQ(diagnostics.gram_full_updates, 1);
        // Ten rounds changing a few percent of the rows, up and down.
        for (int round = 0; round < 10; ++round) {
            std::int64_t changed = 0, weighted = 0;
            for (std::int64_t i = 0; i < f.n; ++i) {
                if (uniform(rng) < 0.03) {
                    c[i] = uniform(rng) < 0.5 ? T(0) : T(uniform(rng));
                }
                changed += c[i] != f.ws.gram_curvature[i];
                weighted += c[i] > T(0);
            }
            std::copy(c.begin(), c.end(), f.ws.curvature.begin());
            gram.refresh({0.0, changed, weighted}, diagnostics);
            EXPECT_LT(max_relative_upper_error(f.ws.gram, f.exact(c), f.d), tolerance) << "round " << round;
        }
        EXPECT_EQ(diagnostics.gram_full_updates, 1) << "small changes must stay incremental";
        EXPECT_EQ(diagnostics.gram_incremental_updates, 10);
        // Many changes: a full recompute again.
        for (std::int64_t i = 0; i < f.n; i += 2) c[i] = T(0.5);
        std::copy(c.begin(), c.end(), f.ws.curvature.begin());
        gram.refresh({0.0, f.n / 2, f.n}, diagnostics);
        EXPECT_EQ(diagnostics.gram_full_updates, 2);
        EXPECT_LT(max_relative_upper_error(f.ws.gram, f.exact(c), f.d), tolerance);
    }
}

// A LAMM problem on a GramFixture's rows: y from a sparse linear model with
// noise and outliers, panels built, empty memory.
template <class T>
struct LammFixture {
    std::vector<T> theta_prev, information, direction, mask;
    double lambda = 0.05;

    explicit LammFixture(GramFixture<T>& f)
        : theta_prev(f.d, T(0)), information(f.d * f.d, T(0)), direction(f.d, T(0)), mask(f.d, T(1)) {
        std::mt19937_64 rng(21);
        std::normal_distribution<double> normal;
        for (std::int64_t i = 0; i < f.n; ++i) {
            double value = 0.3;
            for (std::int64_t j = 0; j < f.p; ++j) value += (j % 3 == 0 ? 1.0 : 0.0) * double(f.X[i * f.p + j]);
            f.y[i] = T(value + 0.2 * normal(rng) + (i % 50 == 0 ? 8.0 * normal(rng) : 0.0));
        }
        mask[f.p] = T(0);
        f.ws.reserve_local_model(f.n, f.d);
        auto& P = f.problem;
        if (f.p <= cpu::fast::narrow_pass_max_features<T>) {  // the panels, as the engine builds them
            f.ws.reserve_panels(f.n, f.p);
            cpu::fast::narrow_build_panels(f.n, f.p, f.X.data(), f.ws.narrow_panels.data());
            P.panels = f.ws.narrow_panels.data();
            P.panel_columns = cpu::fast::narrow_panel_columns(f.p);
        }
        P.theta_prev = theta_prev.data();
        P.information_prev = information.data();
        P.history_direction = direction.data();
        P.weight_sum = double(f.n);
        P.tau = T(1.345);
        P.bandwidth = T(0.5);
    }
};

// The residual, loss, X' s and score sum at theta, directly in double.
template <class T>
void direct(const GramFixture<T>& f, const std::vector<T>& theta, std::vector<T>& r, double* loss,
            std::vector<T>& product, double* score_sum) {
    const double tau = double(f.problem.tau);
    std::vector<double> sums(f.p, 0.0);
    *loss = 0.0;
    *score_sum = 0.0;
    for (std::int64_t i = 0; i < f.n; ++i) {
        double fitted = double(theta[f.p]);
        for (std::int64_t j = 0; j < f.p; ++j) fitted += double(f.X[i * f.p + j]) * double(theta[j]);
        const double ri = double(f.y[i]) - fitted, a = std::fabs(ri);
        r[i] = T(ri);
        *loss += a <= tau ? 0.5 * ri * ri : tau * a - 0.5 * tau * tau;
        const double s = std::max(-tau, std::min(tau, ri));
        *score_sum += s;
        for (std::int64_t j = 0; j < f.p; ++j) sums[j] += s * double(f.X[i * f.p + j]);
    }
    for (std::int64_t j = 0; j < f.p; ++j) product[j] = T(sums[j]);
}

// LAMM with its expected-rejected first trials paired with the next ones
// (one pass for both) ends bit for bit where LAMM one trial per pass ends.
TYPED_TEST(FastGram, PairedLammTrialsChangeNothing) {
    using T = TypeParam;
    for (int threads : {1, 2}) {
        GramFixture<T> f(4096, 16, threads);
        LammFixture<T> l(f);
        auto& P = f.problem;
        P.local_models = false;  // every trial by a pass, paired or not
        std::vector<T> theta[2];
        int iterations[2] = {0, 0};
        for (bool pair : {true, false}) {
            P.pair_trials = pair;
            P.paired_trials = 0;
            cpu::fast::Gram<T> gram(P);
            core::UpdateDiagnostics diagnostics;
            const auto result = cpu::fast::lamm(P, gram, l.mask.data(), l.lambda, 200, 1e-6, diagnostics);
            EXPECT_TRUE(result.converged);
            theta[pair] = std::vector<T>(f.ws.theta.begin(), f.ws.theta.begin() + f.d);
            iterations[pair] = result.iterations;
            if (pair)
                EXPECT_GT(P.paired_trials, 0) << "no pair was evaluated, threads " << threads;
            else
                EXPECT_EQ(P.paired_trials, 0);
        }
        EXPECT_EQ(iterations[0], iterations[1]) << "threads " << threads;
        EXPECT_EQ(theta[0], theta[1]) << "threads " << threads;
    }
}

// Trials inside a local Huber model's ball give what passes give: the same
// solution within rounding, with most trials from the model.
TYPED_TEST(FastGram, LocalModelTrialsAgreeWithPasses) {
    using T = TypeParam;
    // Both stop within tol = 1e-6 of their own path's limit.
    const double tolerance = sizeof(T) == 8 ? 2e-5 : 5e-4;
    for (int variant = 0; variant < 5; ++variant) {  // variant 4: rows too wide for the panels
        const int threads = variant % 2 == 0 ? 1 : 2;
        const bool intercept = variant < 2 || variant == 4, weighted = variant == 2 || variant == 3;
        GramFixture<T> f(4096, variant == 4 ? 80 : 16, threads);
        LammFixture<T> l(f);
        auto& P = f.problem;
        if (weighted)  // frequency weights, some zero
            for (std::int64_t i = 0; i < f.n; ++i) f.w[i] = i % 7 == 3 ? T(0) : T(1 + i % 3);
        P.intercept = intercept;
        P.d = intercept ? f.d : f.p;
        const std::int64_t d = P.d;
        std::vector<T> theta[2], residual[2];
        for (bool local : {false, true}) {
            P.local_models = local;
            P.local_trials = P.local_model_builds = 0;
            cpu::fast::Gram<T> gram(P);
            core::UpdateDiagnostics diagnostics;
            const auto result = cpu::fast::lamm(P, gram, l.mask.data(), l.lambda, 200, 1e-6, diagnostics);
            EXPECT_TRUE(result.converged) << "variant " << variant;
            theta[local] = std::vector<T>(f.ws.theta.begin(), f.ws.theta.begin() + d);
            residual[local] = std::vector<T>(f.ws.residual.begin(), f.ws.residual.begin() + f.n);
            if (local) {
                EXPECT_GE(P.local_model_builds, 1) << "variant " << variant;
                EXPECT_GT(P.local_trials, 5) << "variant " << variant;
            } else {
                EXPECT_EQ(P.local_trials, 0);
            }
        }
        for (std::int64_t j = 0; j < d; ++j)
            EXPECT_NEAR(double(theta[1][j]), double(theta[0][j]), tolerance * (1.0 + std::fabs(double(theta[0][j]))))
                << "coefficient " << j << ", variant " << variant;
        // The residual returned with a model is the exact one at its theta.
        for (std::int64_t i = 0; i < f.n; i += 97) {
            double fitted = intercept ? double(theta[1][f.p]) : 0.0;
            for (std::int64_t j = 0; j < f.p; ++j) fitted += double(f.X[i * f.p + j]) * double(theta[1][j]);
            EXPECT_NEAR(double(residual[1][i]), double(f.y[i]) - fitted, sizeof(T) == 8 ? 1e-12 : 1e-4)
                << "row " << i << ", variant " << variant;
        }
    }
}

// The model's loss and X' s at points inside its ball equal a direct pass
// over the rows at those points (the certain rows' quadratic is exact).
TYPED_TEST(FastGram, LocalModelEqualsADirectPass) {
    using T = TypeParam;
    const double tolerance = sizeof(T) == 8 ? 1e-10 : 1e-4;
    for (std::int64_t features : {16, 80}) {  // narrow rows (panels) and wider ones
        GramFixture<T> f(4096, features, 2);
        LammFixture<T> l(f);
        auto& P = f.problem;
        std::vector<T> theta0(f.d), r0(f.n), product(f.p);
        for (std::int64_t j = 0; j < f.d; ++j) theta0[j] = T(j % 3 == 0 ? 1.0 : 0.05 * double(j));
        double loss0 = 0.0, score_sum0 = 0.0;
        direct(f, theta0, r0, &loss0, product, &score_sum0);
        cpu::fast::Gram<T> gram(P);
        core::UpdateDiagnostics diagnostics;
        cpu::fast::LocalHuberModel<T> model(P);
        const double step = 0.01;
        ASSERT_TRUE(model.build(gram, diagnostics, theta0.data(), r0.data(), loss0, product.data(), score_sum0, step));
        EXPECT_GT(model.uncertain_rows(), 0);
        std::mt19937_64 rng(5);
        std::normal_distribution<double> normal;
        std::vector<T> theta(f.d), r(f.n), direct_product(f.p), model_product(f.p);
        for (int trial = 0; trial < 20; ++trial) {
            double norm = 0.0;
            std::vector<double> u(f.d);
            for (auto& v : u) {
                v = normal(rng);
                norm += v * v;
            }
            // Up to just inside the ball (radius kLocalRadiusSteps * step).
            const double length = cpu::fast::kLocalRadiusSteps * step * (trial + 1) / 21.0;
            for (std::int64_t j = 0; j < f.d; ++j) theta[j] = T(double(theta0[j]) + length * u[j] / std::sqrt(norm));
            ASSERT_TRUE(model.contains(theta.data()));
            double loss = 0.0, score_sum = 0.0, model_score_sum = 0.0;
            direct(f, theta, r, &loss, direct_product, &score_sum);
            const double model_loss = model.loss(theta.data());
            model.scores(theta.data(), model_product.data(), &model_score_sum);
            EXPECT_NEAR(model_loss, loss, tolerance * loss) << "trial " << trial << ", features " << features;
            const double scale = double(f.n);
            EXPECT_NEAR(model_score_sum, score_sum, tolerance * scale) << "trial " << trial << ", features " << features;
            for (std::int64_t j = 0; j < f.p; ++j)
                EXPECT_NEAR(double(model_product[j]), double(direct_product[j]), tolerance * scale)
                        << "trial " << trial << " column " << j;
        }
        // Outside the ball the model says so.
        for (std::int64_t j = 0; j < f.d; ++j) theta[j] = T(double(theta0[j]) + cpu::fast::kLocalRadiusSteps * step);
        EXPECT_FALSE(model.contains(theta.data()));
    }
}

// A line-search batch sums every step's losses exactly as a single step's
// pass does (so batching the halvings cannot change which t is taken), and
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
        const T steps[cpu::fast::kStepBatch] = {T(0.5), T(0.25), T(0.125), T(0.0625)};
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
        EXPECT_EQ(d1.kernel_path, core::KernelPath::fast);
        EXPECT_EQ(d2.kernel_path, core::KernelPath::fast);
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
    EXPECT_EQ(cpu::choose_kernel_path(cpu::KernelChoice::automatic, 900, 17), core::KernelPath::reference_order);
    EXPECT_EQ(cpu::choose_kernel_path(cpu::KernelChoice::automatic, 1000, 17), core::KernelPath::fast);
    EXPECT_EQ(cpu::choose_kernel_path(cpu::KernelChoice::reference_order, 1 << 20, 91),
              core::KernelPath::reference_order);
    EXPECT_EQ(cpu::choose_kernel_path(cpu::KernelChoice::fast, 10, 2), core::KernelPath::fast);
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

TEST(WorkerPoolTest, EveryPartRunsExactlyOnce) {
    cpu::WorkerPool pool;
    for (int parts : {1, 2, 3, 5}) {
        for (int round = 0; round < 2000; ++round) {
            std::vector<std::atomic<int>> hits(parts);
            auto task = [&](int part) { hits[part].fetch_add(1); };
            pool.run(parts, task);
            for (int k = 0; k < parts; ++k) ASSERT_EQ(hits[k].load(), 1) << parts << " parts, round " << round;
        }
    }
    EXPECT_EQ(pool.started_workers(), 4);
}

// A dispatch that finds its workers asleep (idle past their spin) wakes them
// and is reported as such, never as an awake worker missing its part (which
// would make the engine stop splitting); wake() alone runs nothing.
TEST(WorkerPoolTest, SleepingWorkersAreWokenNotReportedMissing) {
    cpu::WorkerPool pool;
    std::vector<std::atomic<int>> hits(2);
    auto task = [&](int part) { hits[part].fetch_add(1); };
    pool.run(2, task);  // starts the worker
    for (int round = 0; round < 3; ++round) {
        std::this_thread::sleep_for(std::chrono::milliseconds(20));  // far past the 200 us spin
        EXPECT_NE(pool.run(2, task), cpu::WorkerPool::Dispatch::late_awake) << "round " << round;
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
        pool.wake();
    }
    EXPECT_EQ(hits[0].load(), 4);
    EXPECT_EQ(hits[1].load(), 4);
}

#if defined(__linux__)
// A worker woken from its futex sleep runs on another CPU than the caller
// that woke it (the pool narrows a sleeper's affinity before waking it):
// left to the scheduler it could be placed behind the busy caller and not
// run at all while the caller works. Once running it has its full CPU set
// again.
TEST(WorkerPoolTest, WokenWorkersRunAwayFromTheCallerWithTheirFullCpuSet) {
    cpu_set_t allowed;
    ASSERT_EQ(sched_getaffinity(0, sizeof allowed, &allowed), 0);
    if (CPU_COUNT(&allowed) < 2) GTEST_SKIP() << "one CPU";
    cpu::WorkerPool pool;
    std::atomic<int> worker_cpu{-1}, worker_cpu_count{-1};
    const auto caller = std::this_thread::get_id();
    auto task = [&](int) {
        if (std::this_thread::get_id() == caller) return;  // the caller may run the worker's part too
        cpu_set_t own;
        worker_cpu_count = sched_getaffinity(0, sizeof own, &own) == 0 ? CPU_COUNT(&own) : -2;
        worker_cpu = sched_getcpu();
    };
    pool.run(2, task);  // starts the worker
    // The caller stays on one CPU for the test, so "the caller's CPU" is fixed.
    const int here = sched_getcpu();
    cpu_set_t pinned;
    CPU_ZERO(&pinned);
    CPU_SET(here, &pinned);
    ASSERT_EQ(sched_setaffinity(0, sizeof pinned, &pinned), 0);
    for (int round = 0; round < 5; ++round) {
        std::this_thread::sleep_for(std::chrono::milliseconds(20));  // far past the spin: the worker sleeps
        worker_cpu = -1;
        // the dispatch that wakes it may run both parts itself; a later one is
        // the worker's (up to 2 s, for a machine busy with other work)
        const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(2);
        while (worker_cpu.load() < 0 && std::chrono::steady_clock::now() < give_up) pool.run(2, task);
        EXPECT_GE(worker_cpu.load(), 0) << "the woken worker never ran, round " << round;
        EXPECT_NE(worker_cpu.load(), here) << "round " << round;
        EXPECT_EQ(worker_cpu_count.load(), CPU_COUNT(&allowed)) << "round " << round;
    }
    ASSERT_EQ(sched_setaffinity(0, sizeof allowed, &allowed), 0);
}
#endif

// The narrow kernels' buffers exist only where those kernels run: the Gram
// scratch grows as d^2 per thread and the panels as a copy of the batch.
TEST(FastPathWorkspace, NarrowBuffersOnlyForNarrowDesigns) {
    cpu::Workspace<double> wide;
    wide.reserve(64, 1001, false, false, 2);
    EXPECT_EQ(wide.gram_scratch.size(), 0u);
    EXPECT_EQ(wide.narrow_panels.size(), 0u);
    cpu::Workspace<double> narrow;
    narrow.reserve(64, 17, false, false, 2);
    EXPECT_GE(static_cast<std::int64_t>(narrow.gram_scratch.size()), 2 * cpu::fast::narrow_gram_scratch_size(17));
}

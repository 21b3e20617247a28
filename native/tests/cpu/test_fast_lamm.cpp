// The fast LAMM evaluator (cpu/fast/lamm_evaluator.hpp): its shortcuts,
// paired trials and the local Huber model, change nothing (pairs: not a
// bit; the model: the solution within rounding, the residual exact).
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "fast_fixture.hpp"

using namespace rh;
using rh::test::FastFixture;
using rh::test::LammFixture;
using rh::test::solve_lamm;

template <class T>
class FastLamm : public ::testing::Test {};
using Dtypes = ::testing::Types<float, double>;
TYPED_TEST_SUITE(FastLamm, Dtypes);

// LAMM with its expected-rejected first trials paired with the next ones
// (one read of X for both) ends bit for bit where LAMM one trial per pass
// ends: narrow rows (the panels' pair pass) and rows too wide for the
// panels (blocked products), 80 columns being wide in both dtypes.
TYPED_TEST(FastLamm, PairedTrialsChangeNothing) {
    using T = TypeParam;
    for (int variant = 0; variant < 6; ++variant) {
        const int threads = 1 + variant % 3;
        const std::int64_t features = variant < 3 ? 16 : 80;
        FastFixture<T> f(4096, features, threads);
        LammFixture<T> l(f);
        f.problem.options.local_models = false;  // every trial by a pass, paired or not
        f.problem.options.wide_pair_min_bytes = 0;  // wide rows pair at any size here
        std::vector<T> theta[2];
        int iterations[2] = {0, 0};
        for (bool pair : {true, false}) {
            f.problem.options.pair_trials = pair;
            const auto out = solve_lamm(f, l);
            EXPECT_TRUE(out.result.converged);
            theta[pair] = out.theta;
            iterations[pair] = out.result.iterations;
            if (pair)
                EXPECT_GT(out.shortcuts.paired_trials, 0) << "no pair was evaluated, variant " << variant;
            else
                EXPECT_EQ(out.shortcuts.paired_trials, 0);
        }
        EXPECT_EQ(iterations[0], iterations[1]) << "variant " << variant;
        EXPECT_EQ(theta[0], theta[1]) << "variant " << variant;
    }
}

// Trials inside a local Huber model's ball give what passes give: the same
// solution within rounding, with most trials from the model.
TYPED_TEST(FastLamm, LocalModelTrialsAgreeWithPasses) {
    using T = TypeParam;
    // Both stop within tol = 1e-6 of their own path's limit.
    const double tolerance = sizeof(T) == 8 ? 2e-5 : 5e-4;
    for (int variant = 0; variant < 5; ++variant) {  // variant 4: rows too wide for the panels
        const int threads = variant % 2 == 0 ? 1 : 2;
        const bool intercept = variant < 2 || variant == 4, weighted = variant == 2 || variant == 3;
        FastFixture<T> f(4096, variant == 4 ? 80 : 16, threads);
        LammFixture<T> l(f);
        auto& P = f.problem;
        if (weighted)  // frequency weights, some zero
            for (std::int64_t i = 0; i < f.n; ++i) f.w[i] = i % 7 == 3 ? T(0) : T(1 + i % 3);
        P.intercept = intercept;
        P.d = intercept ? f.d : f.p;
        const std::int64_t d = P.d;
        std::vector<T> theta[2], residual[2];
        for (bool local : {false, true}) {
            P.options.local_models = local;
            const auto out = solve_lamm(f, l);
            EXPECT_TRUE(out.result.converged) << "variant " << variant;
            theta[local] = out.theta;
            residual[local] = out.residual;
            if (local) {
                EXPECT_GE(out.shortcuts.local_model_builds, 1) << "variant " << variant;
                EXPECT_GT(out.shortcuts.local_trials, 5) << "variant " << variant;
            } else {
                EXPECT_EQ(out.shortcuts.local_trials, 0);
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

// Which batches pair their trials: narrow rows always; wider rows only when
// X is at least FastOptions::wide_pair_min_bytes (16 MiB by default), and
// nothing when pairs are off.
TYPED_TEST(FastLamm, WideRowsPairOnlyLargeBatches) {
    using T = TypeParam;
    cpu::fast::Problem<T> P;
    P.rows = 4096;
    P.features = 16;
    EXPECT_TRUE(cpu::fast::pairs_trials(P));
    P.features = 256;  // the wide class's batch: 4 or 8 MB
    EXPECT_FALSE(cpu::fast::pairs_trials(P));
    P.rows = (std::int64_t{16} << 20) / (256 * static_cast<std::int64_t>(sizeof(T)));  // exactly the floor
    EXPECT_TRUE(cpu::fast::pairs_trials(P));
    P.rows -= 1;
    EXPECT_FALSE(cpu::fast::pairs_trials(P));
    P.options.wide_pair_min_bytes = 0;
    EXPECT_TRUE(cpu::fast::pairs_trials(P));
    P.options.pair_trials = false;
    EXPECT_FALSE(cpu::fast::pairs_trials(P));
    P.features = 16;
    EXPECT_FALSE(cpu::fast::pairs_trials(P));
}

// The solvers' decisions (core/solver_rules.hpp, core/soft_threshold.hpp).
#include <gtest/gtest.h>

#include <vector>

#include "core/soft_threshold.hpp"
#include "core/solver_rules.hpp"

using namespace rh::core;

TEST(SolverRules, ConstantsOfTheContract) {
    EXPECT_EQ(kSmallestStep, 1e-8);
    EXPECT_EQ(kInitialPhi, 1.0);
    EXPECT_EQ(kMaxMajorizationTrials, 40);
    EXPECT_EQ(kMajorizationSlack, 1e-12);
    EXPECT_EQ(kSmallestPhi, 1e-8);
}

TEST(SolverRules, PlainDecreaseAcceptsEqualValues) {
    EXPECT_TRUE(plain_decrease(1.0, 1.0));
    EXPECT_TRUE(plain_decrease(0.5, 1.0));
    EXPECT_FALSE(plain_decrease(1.0 + 1e-16 * 4, 1.0));
}

TEST(SolverRules, ConvergenceIsRelativeToTheNewPoint) {
    EXPECT_TRUE(step_converged(1e-6, 0.0, 1e-6));
    EXPECT_TRUE(step_converged(2e-6, 1.0, 1e-6));
    EXPECT_FALSE(step_converged(2.1e-6, 1.0, 1e-6));
}

TEST(SolverRules, MajorizationAndPhi) {
    // F + g'change + phi/2 ||change||^2
    EXPECT_DOUBLE_EQ(majorization_bound(1.0, -0.5, 4.0, 0.5), 1.0 - 0.5 + 0.5);
    EXPECT_TRUE(majorization_holds(1.0 + 0.5e-12, 1.0));
    EXPECT_FALSE(majorization_holds(1.0 + 2e-12, 1.0));
    EXPECT_EQ(phi_after_rejection(0.75), 1.5);
    EXPECT_EQ(phi_after_acceptance(1.0), 0.5);
    EXPECT_EQ(phi_after_acceptance(1e-8), 1e-8);
}

TEST(SoftThreshold, ShrinksTowardZeroAndLeavesTheInterceptAlone) {
    EXPECT_EQ(soft_threshold(3.0, 1.0), 2.0);
    EXPECT_EQ(soft_threshold(-3.0, 1.0), -2.0);
    EXPECT_EQ(soft_threshold(0.5, 1.0), 0.0);
    EXPECT_EQ(soft_threshold(-0.5, 1.0), 0.0);
    // The LAMM proposal: mask 0 (the intercept, last) is a plain gradient step.
    const std::vector<double> theta{0.2, 0.2}, gradient{-1.0, -1.0}, mask{1.0, 0.0};
    std::vector<double> candidate(2), change(2);
    lamm_proposal<double>(2, theta.data(), gradient.data(), mask.data(), /*lambda*/ 3.0, /*phi*/ 2.0,
                          candidate.data(), change.data());
    // theta - g / phi = 0.7 for both; threshold lambda / phi = 1.5 on the feature only.
    EXPECT_EQ(candidate[0], 0.0);
    EXPECT_DOUBLE_EQ(candidate[1], 0.7);
    EXPECT_DOUBLE_EQ(change[1], 0.5);
}

// The solvers' decisions (core/solver_rules.hpp, core/solve_rule.hpp,
// core/soft_threshold.hpp).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "core/soft_threshold.hpp"
#include "core/solve_rule.hpp"
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

TEST(SolverRules, ANonFiniteObjectiveIsNeverADecreaseNorMajorized) {
    const double inf = std::numeric_limits<double>::infinity(), nan = std::nan("");
    EXPECT_FALSE(plain_decrease(nan, 1.0));
    EXPECT_FALSE(plain_decrease(-inf, 1.0));
    EXPECT_FALSE(plain_decrease(inf, inf));
    EXPECT_FALSE(majorization_holds(nan, 1.0));
    EXPECT_FALSE(majorization_holds(-inf, 1.0));
    EXPECT_TRUE(finite_value(-1e308) && !finite_value(inf) && !finite_value(nan));
}

TEST(SolveRule, RegularOnlyAboveEpsTimesD) {
    EXPECT_EQ(singular_rcond_threshold<double>(10), 10 * 2.220446049250313e-16);
    EXPECT_EQ(singular_rcond_threshold<float>(3), 3 * 1.1920928955078125e-07);
    EXPECT_TRUE(regular_solve_allowed<double>(1e-14, 10));
    EXPECT_FALSE(regular_solve_allowed<double>(2e-15, 10));
    EXPECT_FALSE(regular_solve_allowed<double>(std::nan(""), 10));
    EXPECT_FALSE(regular_solve_allowed<float>(1e-7, 2));
    EXPECT_EQ(reciprocal_condition(2.0, 4.0), 0.125);
    EXPECT_EQ(reciprocal_condition(0.0, 4.0), 0.0);
    EXPECT_EQ(reciprocal_condition(2.0, std::numeric_limits<double>::infinity()), 0.0);
}

TEST(SolveRule, AnEstimateDecidesOnlyFarFromTheThreshold) {
    // The estimate bounds the exact rcond from above: at or below eps d it
    // is singular; beyond 1000 eps d regular; in between the exact value decides.
    const double threshold = singular_rcond_threshold<double>(4);
    EXPECT_EQ(classify_rcond_estimate<double>(threshold, 4), RcondEstimate::singular);
    EXPECT_EQ(classify_rcond_estimate<double>(std::nan(""), 4), RcondEstimate::singular);
    EXPECT_EQ(classify_rcond_estimate<double>(2 * threshold, 4), RcondEstimate::borderline);
    EXPECT_EQ(classify_rcond_estimate<double>(kEstimateMargin * threshold, 4), RcondEstimate::borderline);
    EXPECT_EQ(classify_rcond_estimate<double>(2 * kEstimateMargin * threshold, 4), RcondEstimate::regular);
}

TEST(SolverRules, LammStallTest) {
    // Never before kPlainLammIterations.
    EXPECT_FALSE(lamm_stalled(kPlainLammIterations - 1, 1.0, 1.0, 1.0, 1.0, 1e-6));
    // Resolved steps: a stall when the step did not halve over the window.
    EXPECT_TRUE(lamm_stalled(30, 1e-2, 1.5e-2, 1.0, 1.0, 1e-6));
    EXPECT_FALSE(lamm_stalled(30, 1e-2, 3e-2, 1.0, 1.0, 1e-6));
    // At the v1 slack's resolution (margin 0.5e-12 < 100 slacks): taken over
    // only when sqrt(2 slack / phi) is within 16x of tol (1 + ||theta||).
    EXPECT_TRUE(lamm_stalled(30, 1e-6, 1e-6, 1.0, 0.5, 1e-6));    // 1.4e-6 vs 1.5e-6
    EXPECT_FALSE(lamm_stalled(30, 1e-6, 1e-6, 0.5, 1.5, 1e-8));   // 2e-6 vs 2.5e-8: the external l1 case
    EXPECT_TRUE(lamm_stalled(30, 1e-6, 1e-6, 0.5, 1.5, 1e-7));    // 2e-6 vs 16 * 2.5e-7
}

TEST(SolverRules, AcceleratedPhaseSlackAndMomentum) {
    EXPECT_EQ(rounding_slack(1.0, 2.220446049250313e-16), 16 * 2.220446049250313e-16);
    EXPECT_EQ(rounding_slack(1e6, 2.220446049250313e-16), kMajorizationSlack);  // never looser than v1
    EXPECT_EQ(rounding_slack(1.0, 1.1920928955078125e-07), kMajorizationSlack);
    EXPECT_EQ(momentum_next(1.0), 0.5 * (1.0 + std::sqrt(5.0)));
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

// The proposal as the reference writes it, theta - g / phi: what
// lamm_proposal must give bit for bit, whether phi's reciprocal replaces
// the division (phi a power of two) or not.
template <class T>
void proposal_by_division(long long d, const T* theta, const T* gradient, const T* mask, double lambda_value,
                          double phi, T* candidate, T* change) {
    const T phi_ = static_cast<T>(phi);
    const T threshold = static_cast<T>(lambda_value / phi);
    for (long long j = 0; j < d; ++j) {
        candidate[j] = soft_threshold(static_cast<T>(theta[j] - gradient[j] / phi_), threshold * mask[j]);
        change[j] = candidate[j] - theta[j];
    }
}

template <class T>
void expect_proposals_match_the_division(std::uint32_t seed) {
    std::mt19937 random(seed);
    std::uniform_real_distribution<double> uniform(-1.0, 1.0);
    std::uniform_int_distribution<int> exponent(std::numeric_limits<T>::min_exponent - 24,
                                                std::numeric_limits<T>::max_exponent - 4);
    const long long d = 257;
    std::vector<T> theta(d), gradient(d), mask(d), got_candidate(d), got_change(d), want_candidate(d),
        want_change(d);
    for (long long j = 0; j < d; ++j) {
        theta[j] = static_cast<T>(std::ldexp(uniform(random), exponent(random) / 4));
        gradient[j] = static_cast<T>(std::ldexp(uniform(random), exponent(random)));  // subnormals to huge
        mask[j] = j % 5 == 0 ? T(0) : T(1);
    }
    gradient[0] = T(0);
    gradient[1] = -T(0);
    gradient[2] = std::numeric_limits<T>::denorm_min();
    gradient[3] = std::numeric_limits<T>::max();
    std::vector<double> phis;
    for (int k = -40; k <= 100; ++k) phis.push_back(std::ldexp(1.0, k));  // doubled and halved from 1
    for (int k = 0; k <= 40; ++k) phis.push_back(1e-8 * std::ldexp(1.0, k));  // from kSmallestPhi on
    for (double phi : {3.0, 0.1, 1.0 / 3.0, 1e300, 1e-300}) phis.push_back(phi);
    for (double phi : phis) {
        lamm_proposal<T>(d, theta.data(), gradient.data(), mask.data(), 0.75, phi, got_candidate.data(),
                         got_change.data());
        proposal_by_division<T>(d, theta.data(), gradient.data(), mask.data(), 0.75, phi, want_candidate.data(),
                                want_change.data());
        ASSERT_EQ(std::memcmp(got_candidate.data(), want_candidate.data(), d * sizeof(T)), 0) << "phi " << phi;
        ASSERT_EQ(std::memcmp(got_change.data(), want_change.data(), d * sizeof(T)), 0) << "phi " << phi;
    }
}

TEST(LammProposal, GivesTheDivisionsBitsForEveryPhi) {
    expect_proposals_match_the_division<double>(7);
    expect_proposals_match_the_division<float>(11);
}

TEST(LammProposal, TellsPowersOfTwo) {
    EXPECT_TRUE(is_power_of_two(1.0));
    EXPECT_TRUE(is_power_of_two(0.5));
    EXPECT_TRUE(is_power_of_two(std::ldexp(1.0, -1074)));  // the smallest subnormal
    EXPECT_TRUE(is_power_of_two(std::ldexp(1.0, 1023)));
    EXPECT_FALSE(is_power_of_two(1e-8));
    EXPECT_FALSE(is_power_of_two(3.0));
    EXPECT_FALSE(is_power_of_two(0.0));
    EXPECT_FALSE(is_power_of_two(std::numeric_limits<double>::infinity()));
    EXPECT_FALSE(is_power_of_two(std::nan("")));
}

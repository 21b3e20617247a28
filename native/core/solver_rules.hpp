// The decisions of the two solvers (ALGORITHM.md and amendment 0002), written
// once for every engine: the constants, the tests and the updates the
// damped-Newton and LAMM drivers (newton_driver.hpp, lamm_driver.hpp) make,
// and that a device engine makes inside its own kernels. The Python
// reference states the same rules in src/renewable_huber/core/solver_rules.py.
#pragma once

#include <math.h>

#include "core/host_device.hpp"

namespace rh::core {

// x is neither infinite nor NaN (inf - inf and NaN - NaN are NaN; needs no
// <cmath>, so it compiles for a device too; the library builds without
// fast-math).
RH_HOST_DEVICE inline bool finite_value(double x) noexcept { return x - x == 0.0; }

// Damped Newton: the line search halves t from 1 while t >= kSmallestStep.
inline constexpr double kSmallestStep = 1e-8;
// The majorizer's search (amendment 0002) doubles an accepted t = 1 while f
// keeps strictly decreasing, up to this t.
inline constexpr double kLargestMajorizerStep = 1048576.0;  // 2^20

// LAMM: phi starts at kInitialPhi for a batch, doubles on a rejected trial
// (at most kMaxMajorizationTrials trials per iteration), halves after an
// accepted one but not below kSmallestPhi; a trial is accepted when
// f(candidate) <= bound + kMajorizationSlack.
inline constexpr double kInitialPhi = 1.0;
inline constexpr int kMaxMajorizationTrials = 40;
inline constexpr double kMajorizationSlack = 1e-12;
inline constexpr double kSmallestPhi = 1e-8;

// Plain decrease (not Armijo): a line-search trial is accepted when it does
// not raise f; a non-finite f is never accepted.
RH_HOST_DEVICE inline bool plain_decrease(double candidate_value, double value) noexcept {
    return finite_value(candidate_value) && candidate_value <= value;
}

// Both solvers stop when ||theta_new - theta|| <= tol (1 + ||theta_new||).
RH_HOST_DEVICE inline bool step_converged(double change_norm, double theta_norm, double tol) noexcept {
    return change_norm <= tol * (1.0 + theta_norm);
}

// LAMM's majorizer of f at theta along `change`:
// F + g' change + (phi / 2) ||change||^2.
RH_HOST_DEVICE inline double majorization_bound(double value, double gradient_dot_change, double phi,
                                                double change_norm) noexcept {
    return value + gradient_dot_change + (0.5 * phi) * (change_norm * change_norm);
}

// f(candidate) <= bound + slack (the v1 slack unless the accelerated phase
// passes its own); a non-finite f never holds.
RH_HOST_DEVICE inline bool majorization_holds(double candidate_value, double bound,
                                              double slack = kMajorizationSlack) noexcept {
    return finite_value(candidate_value) && candidate_value <= bound + slack;
}

RH_HOST_DEVICE inline double phi_after_rejection(double phi) noexcept { return 2.0 * phi; }

RH_HOST_DEVICE inline double phi_after_acceptance(double phi) noexcept {
    const double half = phi / 2.0;
    return half > kSmallestPhi ? half : kSmallestPhi;
}

// ---- LAMM's accelerated phase (amendment 0002) ----
//
// The v1 iteration runs first. After kPlainLammIterations accepted
// iterations without convergence it hands over to the accelerated phase
// when either
//  * progress is slow where the v1 test still resolves the steps: the
//    accepted step did not shrink below kStallStepRatio of the step
//    kStallWindow iterations earlier, and its majorization margin
//    phi/2 ||step||^2 exceeds kResolvedMarginSlacks v1 slacks; or
//  * the steps are at the v1 test's resolution (margin below that), and the
//    radius sqrt(2 slack / phi) the v1 slack cannot resolve is within
//    kResolutionReach of the step threshold tol (1 + ||theta||).
inline constexpr int kPlainLammIterations = 25;
inline constexpr int kStallWindow = 10;
inline constexpr double kStallStepRatio = 0.5;
inline constexpr double kResolvedMarginSlacks = 100.0;
inline constexpr double kResolutionReach = 16.0;
// The accelerated phase's slack: this many epsilons of the objective's
// scale max(|F_start|, |F|), never looser than the v1 slack.
inline constexpr double kRoundingSlackEpsilons = 16.0;

// `phi` is the accepted trial's; `step_norm_window_ago` is the accepted step
// kStallWindow iterations earlier (+infinity before there is one).
RH_HOST_DEVICE inline bool lamm_stalled(int iteration, double step_norm, double step_norm_window_ago, double phi,
                                        double theta_norm, double tol) noexcept {
    if (iteration < kPlainLammIterations) return false;
    const double margin = 0.5 * phi * step_norm * step_norm;
    if (margin > kResolvedMarginSlacks * kMajorizationSlack) return step_norm > kStallStepRatio * step_norm_window_ago;
    // resolution <= reach * threshold, squared (both sides are non-negative)
    const double threshold = kResolutionReach * tol * (1.0 + theta_norm);
    return 2.0 * kMajorizationSlack / phi <= threshold * threshold;
}

// FISTA's momentum: t_{k+1} = (1 + sqrt(1 + 4 t_k^2)) / 2, starting from 1.
RH_HOST_DEVICE inline double momentum_next(double t) noexcept { return 0.5 * (1.0 + ::sqrt(1.0 + 4.0 * t * t)); }

// 16 eps (|F| scale), capped at the v1 slack; eps of the model dtype.
RH_HOST_DEVICE inline double rounding_slack(double objective_scale, double epsilon) noexcept {
    const double slack = kRoundingSlackEpsilons * epsilon * objective_scale;
    return slack < kMajorizationSlack ? slack : kMajorizationSlack;
}

}  // namespace rh::core

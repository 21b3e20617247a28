// The decisions of the two solvers (ALGORITHM.md), written once for every
// engine: the constants, the tests and the updates the damped-Newton and
// LAMM drivers (newton_driver.hpp, lamm_driver.hpp) make, and that a device
// engine makes inside its own kernels.
#pragma once

#include "core/host_device.hpp"

namespace rh::core {

// Damped Newton: the line search halves t from 1 while t >= kSmallestStep.
inline constexpr double kSmallestStep = 1e-8;

// LAMM: phi starts at kInitialPhi for a batch, doubles on a rejected trial
// (at most kMaxMajorizationTrials trials per iteration), halves after an
// accepted one but not below kSmallestPhi; a trial is accepted when
// f(candidate) <= bound + kMajorizationSlack.
inline constexpr double kInitialPhi = 1.0;
inline constexpr int kMaxMajorizationTrials = 40;
inline constexpr double kMajorizationSlack = 1e-12;
inline constexpr double kSmallestPhi = 1e-8;

// Plain decrease (not Armijo): a line-search trial is accepted when it does
// not raise f.
RH_HOST_DEVICE inline bool plain_decrease(double candidate_value, double value) noexcept {
    return candidate_value <= value;
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

RH_HOST_DEVICE inline bool majorization_holds(double candidate_value, double bound) noexcept {
    return candidate_value <= bound + kMajorizationSlack;
}

RH_HOST_DEVICE inline double phi_after_rejection(double phi) noexcept { return 2.0 * phi; }

RH_HOST_DEVICE inline double phi_after_acceptance(double phi) noexcept {
    const double half = phi / 2.0;
    return half > kSmallestPhi ? half : kSmallestPhi;
}

}  // namespace rh::core

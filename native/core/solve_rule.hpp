// The solve ladder's decision (amendment 0002, "One solve ladder"), written
// once for every engine, host and device; the Python reference states it in
// src/renewable_huber/core/solve_ladder.py.
//
//   rcond = 1 / (||A||_1 ||A^-1||_1), exact: ||A^-1||_1 from the inverse the
//           factorization gives (not LAPACK's gecon/pocon estimate); 0 when
//           the factorization fails or a norm is not finite
//   a regular solve (Cholesky or LU) when rcond > eps * d and the solution
//   is finite; otherwise the minimum-norm least-squares solution with the
//   singular values below eps * d of the largest treated as zero.
//
// An engine may decide from a 1-norm condition estimate (LAPACK's
// gecon/pocon, Hager-Higham: a lower bound on ||A^-1||_1, so the estimated
// rcond is an upper bound on the exact one) and compute the exact rcond only
// when the estimate is within kEstimateMargin of the threshold
// (classify_rcond_estimate): its decisions then differ from the exact rule
// only where the estimator underestimates ||A^-1||_1 by more than that
// factor (it is typically within 3x).
#pragma once

#include <cstdint>

#include "core/host_device.hpp"

namespace rh::core {

// The model dtype's machine epsilon (working precision).
template <class T>
RH_HOST_DEVICE constexpr double machine_epsilon() noexcept;
template <>
RH_HOST_DEVICE constexpr double machine_epsilon<double>() noexcept {
    return 2.220446049250313e-16;
}
template <>
RH_HOST_DEVICE constexpr double machine_epsilon<float>() noexcept {
    return 1.1920928955078125e-07;
}

// eps * d: at or below it a system is singular to working precision; also
// the least-squares solve's singular-value cutoff.
template <class T>
RH_HOST_DEVICE inline double singular_rcond_threshold(std::int64_t d) noexcept {
    return machine_epsilon<T>() * static_cast<double>(d);
}

// 1 / (norm * inverse_norm), or 0 when either is zero or not finite.
RH_HOST_DEVICE inline double reciprocal_condition(double norm, double inverse_norm) noexcept {
    const double product = norm * inverse_norm;
    if (!(product > 0.0) || !(product - product == 0.0)) return 0.0;
    return 1.0 / product;
}

// The regular route is allowed only above the threshold (NaN is not).
template <class T>
RH_HOST_DEVICE inline bool regular_solve_allowed(double rcond, std::int64_t d) noexcept {
    return rcond > singular_rcond_threshold<T>(d);
}

inline constexpr double kEstimateMargin = 1000.0;

enum class RcondEstimate : int { singular = 0, regular = 1, borderline = 2 };

// singular: estimate <= eps d (then the exact rcond is too); regular:
// estimate > kEstimateMargin eps d; borderline: compute the exact rcond.
template <class T>
RH_HOST_DEVICE inline RcondEstimate classify_rcond_estimate(double estimate, std::int64_t d) noexcept {
    const double threshold = singular_rcond_threshold<T>(d);
    if (!(estimate > threshold)) return RcondEstimate::singular;
    return estimate > kEstimateMargin * threshold ? RcondEstimate::regular : RcondEstimate::borderline;
}

}  // namespace rh::core

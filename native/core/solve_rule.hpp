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

}  // namespace rh::core

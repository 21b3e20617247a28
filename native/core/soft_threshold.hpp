// The proximal map of the L1 penalty (ALGORITHM.md, "L1 solver: LAMM").
#pragma once

#include <cmath>

#include "core/host_device.hpp"

namespace rh::core {

// sign(v) * max(|v| - threshold, 0), as NumPy evaluates it.
template <class T>
RH_HOST_DEVICE inline T soft_threshold(T v, T threshold) noexcept {
    const T sign = v > T(0) ? T(1) : (v < T(0) ? T(-1) : T(0));
    const T magnitude = v < T(0) ? -v : v;
    const T shrunk = magnitude - threshold;
    return sign * (shrunk > T(0) ? shrunk : T(0));
}

// True when x is a power of two (frexp's fraction 0.5): then x's
// reciprocal is exact, and g * (1 / x) is g / x, both the exact quotient
// rounded once.
RH_HOST_DEVICE inline bool is_power_of_two(double x) noexcept {
    int exponent = 0;
    return ::frexp(x, &exponent) == 0.5;
}

// a * b rounded once and never fused into a neighbouring add (a GPU's
// compiler contracts a * b + c into an FMA; the host build does not): the
// product the division it replaces would give, subnormal results included.
template <class T>
RH_HOST_DEVICE inline T rounded_product(T a, T b) noexcept {
#if defined(__CUDA_ARCH__)
    if constexpr (sizeof(T) == sizeof(double))
        return __dmul_rn(a, b);
    else
        return __fmul_rn(a, b);
#else
    return a * b;
#endif
}

// The LAMM trial at phi: candidate_j = soft_threshold(theta_j - g_j / phi,
// (lambda / phi) mask_j) and change_j = candidate_j - theta_j, the
// thresholds and 1/phi scaled in the model dtype as the reference does.
// phi is a power of two unless it reached kSmallestPhi (it starts at 1,
// doubles and halves), so g_j / phi is a product with phi's exact
// reciprocal: the same bits, where a division is a chain of dependent
// operations an entry on a GPU's driver thread.
template <class T>
RH_HOST_DEVICE inline void lamm_proposal(long long d, const T* theta, const T* gradient, const T* penalty_mask,
                                         double lambda_value, double phi, T* candidate, T* change) noexcept {
    const T phi_ = static_cast<T>(phi);
    const T threshold = static_cast<T>(lambda_value / phi);
    auto propose = [&](long long j, T scaled_gradient) {
        const T proximal_point = theta[j] - scaled_gradient;
        candidate[j] = soft_threshold(proximal_point, threshold * penalty_mask[j]);
        change[j] = candidate[j] - theta[j];
    };
    if (is_power_of_two(static_cast<double>(phi_))) {
        const T inverse = T(1) / phi_;  // exact
        for (long long j = 0; j < d; ++j) propose(j, rounded_product(gradient[j], inverse));
    } else {
        for (long long j = 0; j < d; ++j) propose(j, gradient[j] / phi_);
    }
}

}  // namespace rh::core

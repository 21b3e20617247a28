// The proximal map of the L1 penalty (ALGORITHM.md, "L1 solver: LAMM").
#pragma once

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

// The LAMM trial at phi: candidate_j = soft_threshold(theta_j - g_j / phi,
// (lambda / phi) mask_j) and change_j = candidate_j - theta_j, the
// thresholds and 1/phi scaled in the model dtype as the reference does.
template <class T>
RH_HOST_DEVICE inline void lamm_proposal(long long d, const T* theta, const T* gradient, const T* penalty_mask,
                                         double lambda_value, double phi, T* candidate, T* change) noexcept {
    const T phi_ = static_cast<T>(phi);
    const T threshold = static_cast<T>(lambda_value / phi);
    for (long long j = 0; j < d; ++j) {
        const T proximal_point = theta[j] - gradient[j] / phi_;
        candidate[j] = soft_threshold(proximal_point, threshold * penalty_mask[j]);
        change[j] = candidate[j] - theta[j];
    }
}

}  // namespace rh::core

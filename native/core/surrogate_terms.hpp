// The batch's bookkeeping around the surrogate objective (ALGORITHM.md,
// "Smooth surrogate objective" and "Diagnostics"), written once: the penalty
// mask, the historical subgradient's direction and coefficient, and the
// objective a batch reports.
#pragma once

#include <cstdint>

#include "core/host_device.hpp"
#include "core/solver_config.hpp"
#include "core/state_view.hpp"

namespace rh::core {

// m_j: 1 for every feature, 0 for the intercept (the last parameter).
template <class T>
RH_HOST_DEVICE inline T penalty_mask_entry(std::int64_t j, std::int64_t n_features) noexcept {
    return j < n_features ? T(1) : T(0);
}

// s_j = sign(theta_prev_j) * m_j.
template <class T>
RH_HOST_DEVICE inline T history_direction_entry(T previous_coefficient, T mask) noexcept {
    const T sign = previous_coefficient > T(0) ? T(1) : (previous_coefficient < T(0) ? T(-1) : T(0));
    return sign * mask;
}

// mask and history direction of a batch (d entries each).
template <class T>
void penalty_mask_and_history(std::int64_t d, std::int64_t n_features, const T* previous_coefficients, T* mask,
                              T* history_direction) noexcept {
    for (std::int64_t j = 0; j < d; ++j) {
        mask[j] = penalty_mask_entry<T>(j, n_features);
        history_direction[j] = history_direction_entry(previous_coefficients[j], mask[j]);
    }
}

// The historical subgradient enters f only for "l1" once rows were seen.
inline bool uses_history(const SolverConfig& config, const StateCounters& counters) noexcept {
    return config.penalty == Penalty::l1 && counters.n_samples_seen > 0;
}

// c = (Wprev / N) * previous_lambda.
inline double history_coefficient(double weight_sum_before, double weight_sum_after,
                                  double previous_lambda) noexcept {
    return weight_sum_before / weight_sum_after * previous_lambda;
}

// sum_j |theta_j| m_j, summed in double in index order (every engine).
template <class T>
RH_HOST_DEVICE inline double masked_l1_norm(std::int64_t d, const T* theta, const T* mask) noexcept {
    double sum = 0.0;
    for (std::int64_t j = 0; j < d; ++j) {
        const double v = static_cast<double>(theta[j]);
        sum += (v < 0.0 ? -v : v) * static_cast<double>(mask[j]);
    }
    return sum;
}

// The objective a batch reports: F for "none"; F + lambda sum |m theta| for "l1".
template <class T>
RH_HOST_DEVICE inline double reported_objective(Penalty penalty, double value, double lambda_value, std::int64_t d,
                                                const T* theta, const T* mask) noexcept {
    return penalty == Penalty::l1 ? value + lambda_value * masked_l1_norm(d, theta, mask) : value;
}

}  // namespace rh::core

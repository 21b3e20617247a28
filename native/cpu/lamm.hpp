// LAMM (local adaptive majorize-minimize) for penalty "l1" (ALGORITHM.md).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>

#include "cpu/solver_result.hpp"
#include "cpu/surrogate_objective.hpp"

namespace rh::cpu {

inline constexpr int kMaxMajorizationTrials = 40;
inline constexpr double kMajorizationSlack = 1e-12;
inline constexpr double kSmallestPhi = 1e-8;

// sign(v) * max(|v| - threshold, 0), as NumPy evaluates it.
template <class T>
inline T soft_threshold(T v, T threshold) noexcept {
    const T sign = v > T(0) ? T(1) : (v < T(0) ? T(-1) : T(0));
    const T shrunk = std::fabs(v) - threshold;
    return sign * (shrunk > T(0) ? shrunk : T(0));
}

template <class T>
SolverResult lamm(const SurrogateObjective<T>& objective, const T* penalty_mask, double lambda_value, int max_iter,
                  double tol) {
    Workspace<T>& ws = *objective.workspace;
    const std::int64_t d = objective.d;
    const auto n = static_cast<blas::index_t>(d);
    T* theta = ws.theta.data();
    T* candidate = ws.candidate.data();
    T* change = ws.step.data();
    T* gradient = ws.gradient.data();

    for (std::int64_t j = 0; j < d; ++j) theta[j] = objective.theta_prev[j];
    objective.residual(theta, ws.residual.data());
    double value = objective.value(theta, ws.residual.data());
    double phi = 1.0;
    for (int iteration = 1; iteration <= max_iter; ++iteration) {
        objective.gradient(theta, ws.residual.data(), gradient);
        bool accepted = false;
        double candidate_value = 0.0;
        for (int trial = 0; trial < kMaxMajorizationTrials; ++trial) {
            const T phi_ = static_cast<T>(phi);
            const T threshold = static_cast<T>(lambda_value / phi);
            for (std::int64_t j = 0; j < d; ++j) {
                const T proximal_point = theta[j] - gradient[j] / phi_;
                candidate[j] = soft_threshold(proximal_point, threshold * penalty_mask[j]);
                change[j] = candidate[j] - theta[j];
            }
            const double change_norm = euclidean_norm(d, change);
            const double bound = value + static_cast<double>(blas::dot(n, gradient, change)) +
                                 (0.5 * phi) * (change_norm * change_norm);
            objective.residual(candidate, ws.candidate_residual.data());
            candidate_value = objective.value(candidate, ws.candidate_residual.data());
            if (candidate_value <= bound + kMajorizationSlack) {
                accepted = true;
                break;
            }
            phi *= 2.0;
        }
        if (!accepted) return {iteration, false, value};
        std::swap(ws.theta, ws.candidate);
        std::swap(ws.residual, ws.candidate_residual);
        theta = ws.theta.data();
        candidate = ws.candidate.data();
        value = candidate_value;
        phi = std::max(phi / 2.0, kSmallestPhi);
        if (euclidean_norm(d, change) <= tol * (1.0 + euclidean_norm(d, theta))) return {iteration, true, value};
    }
    return {max_iter, false, value};
}

}  // namespace rh::cpu

// Damped Newton for penalty "none" with the plain-decrease halving line
// search of ALGORITHM.md.
//
// Backtracking in O(n): the trial at t = 1 is evaluated exactly, which also
// yields Z step = r(theta - step) - r(theta); a later trial's residual is then
// r + t * Z step, an O(n) update instead of an O(n d) product. Those cheap
// values differ from the exact ones by rounding, so a trial whose cheap value
// lies within a rounding band of F, and every trial about to be accepted, is
// re-evaluated exactly: accept/reject decisions and the accepted state are
// the ones the reference computes.
#pragma once

#include <cmath>
#include <cstdint>
#include <limits>

#include "core/diagnostics.hpp"
#include "cpu/solve_ladder.hpp"
#include "cpu/solver_result.hpp"
#include "cpu/surrogate_objective.hpp"

namespace rh::cpu {

inline constexpr double kSmallestStep = 1e-8;

// Rounding band of a cheap (O(n)) objective value: sum_i w_i |score_i| |dr_i| / N
// with |dr_i| bounded by a few ulps of the magnitudes that formed r_i.
template <class T>
double cheap_value_band(const SurrogateObjective<T>& objective, const T* r, const T* r_full_step,
                        double value) {
    const T* w = objective.weights;
    const T* y = objective.response;
    double magnitude = 0.0;
    for (std::int64_t i = 0; i < objective.rows; ++i)
        magnitude += static_cast<double>(w[i]) *
                     (std::fabs(static_cast<double>(y[i])) + std::fabs(static_cast<double>(r[i])) +
                      std::fabs(static_cast<double>(r_full_step[i])));
    const double eps = std::numeric_limits<T>::epsilon();
    const double scale = std::fabs(value) + static_cast<double>(objective.tau) * magnitude /
                                                static_cast<double>(objective.weight_sum);
    return 16.0 * static_cast<double>(objective.d + 8) * eps * scale;
}

template <class T>
SolverResult damped_newton(const SurrogateObjective<T>& objective, int max_iter, double tol,
                           core::UpdateDiagnostics& diagnostics) {
    Workspace<T>& ws = *objective.workspace;
    const std::int64_t n = objective.rows, d = objective.d;
    T* theta = ws.theta.data();
    T* candidate = ws.candidate.data();
    T* step = ws.step.data();
    T* gradient = ws.gradient.data();
    T* r = ws.residual.data();
    T* rc = ws.candidate_residual.data();
    T* design_step = ws.design_step.data();

    for (std::int64_t j = 0; j < d; ++j) theta[j] = objective.theta_prev[j];
    objective.residual(theta, r);
    double value = objective.value(theta, r);

    for (int iteration = 1; iteration <= max_iter; ++iteration) {
        objective.gradient(theta, r, gradient);
        objective.newton_matrix(r, ws.newton_matrix.data());
        diagnostics.record(solve_with_fallback(d, ws.newton_matrix.data(), gradient, step, ws));

        auto form_candidate = [&](double t) {
            const T scaled = static_cast<T>(t);
            for (std::int64_t j = 0; j < d; ++j) candidate[j] = theta[j] - scaled * step[j];
        };
        double t = 1.0;
        form_candidate(t);
        objective.residual(candidate, rc);
        double candidate_value = objective.value(candidate, rc);
        bool accepted = candidate_value <= value;
        if (!accepted) {
            for (std::int64_t i = 0; i < n; ++i) design_step[i] = rc[i] - r[i];
            const double band = cheap_value_band(objective, r, rc, value);
            for (t = 0.5; t >= kSmallestStep; t /= 2.0) {
                form_candidate(t);
                const T scaled = static_cast<T>(t);
                for (std::int64_t i = 0; i < n; ++i) rc[i] = r[i] + scaled * design_step[i];
                candidate_value = objective.value(candidate, rc);
                if (candidate_value > value + band) continue;  // clearly no decrease
                objective.residual(candidate, rc);               // exact, as the reference
                candidate_value = objective.value(candidate, rc);
                if (candidate_value <= value) {
                    accepted = true;
                    break;
                }
            }
        }
        if (!accepted) return {iteration, false, value};

        for (std::int64_t j = 0; j < d; ++j) step[j] = candidate[j] - theta[j];  // reuse as "diff"
        const double change = euclidean_norm(d, step);
        std::swap(ws.theta, ws.candidate);
        std::swap(ws.residual, ws.candidate_residual);
        theta = ws.theta.data();
        candidate = ws.candidate.data();
        r = ws.residual.data();
        rc = ws.candidate_residual.data();
        value = candidate_value;
        if (change <= tol * (1.0 + euclidean_norm(d, theta))) return {iteration, true, value};
    }
    return {max_iter, false, value};
}

}  // namespace rh::cpu

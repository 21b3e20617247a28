// LAMM (local adaptive majorize-minimize) for penalty "l1" (ALGORITHM.md).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <utility>

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

// The LAMM iterations, written once for both kernel paths. The evaluator
// supplies the path's arithmetic (each path keeps its own rounding):
//   double start(const T* theta, T* r)                      residual and f
//   void gradient(const T* theta, const T* r, T* g)
//   double dot(const T* a, const T* b)                      length d
//   double norm(const T* x)                                 length d
//   double candidate_value(const T* cand, const T* change, const T* r, T* r_cand)
//   T* pair_buffer()   2 d elements: where the next trial's change and
//                      candidate (at twice this trial's phi) go when the
//                      evaluator will evaluate both in one pass; null: no
//                      pair. Asked before each iteration's first trial.
template <class T, class Evaluator>
SolverResult lamm_iterations(Evaluator& evaluator, Workspace<T>& ws, std::int64_t d, const T* theta_prev,
                             const T* penalty_mask, double lambda_value, int max_iter, double tol) {
    T* theta = ws.theta.data();
    T* candidate = ws.candidate.data();
    T* change = ws.step.data();
    T* gradient = ws.gradient.data();

    for (std::int64_t j = 0; j < d; ++j) theta[j] = theta_prev[j];
    double value = evaluator.start(theta, ws.residual.data());
    double phi = 1.0;
    // The trial point at `phi_value`: its candidate and change from theta.
    auto propose = [&](double phi_value, T* out_candidate, T* out_change) {
        const T phi_ = static_cast<T>(phi_value);
        const T threshold = static_cast<T>(lambda_value / phi_value);
        for (std::int64_t j = 0; j < d; ++j) {
            const T proximal_point = theta[j] - gradient[j] / phi_;
            out_candidate[j] = soft_threshold(proximal_point, threshold * penalty_mask[j]);
            out_change[j] = out_candidate[j] - theta[j];
        }
    };
    for (int iteration = 1; iteration <= max_iter; ++iteration) {
        evaluator.gradient(theta, ws.residual.data(), gradient);
        bool accepted = false;
        double candidate_value = 0.0;
        for (int trial = 0; trial < kMaxMajorizationTrials; ++trial) {
            propose(phi, candidate, change);
            // The next trial's point (2 phi), computed as that trial will
            // compute it, for an evaluator that takes both in one pass.
            if (T* next = trial == 0 ? evaluator.pair_buffer() : nullptr) propose(2.0 * phi, next + d, next);
            const double change_norm = evaluator.norm(change);
            const double bound = value + evaluator.dot(gradient, change) + (0.5 * phi) * (change_norm * change_norm);
            candidate_value = evaluator.candidate_value(candidate, change, ws.residual.data(),
                                                        ws.candidate_residual.data());
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
        if (evaluator.norm(change) <= tol * (1.0 + evaluator.norm(theta))) return {iteration, true, value};
    }
    return {max_iter, false, value};
}

// The reference-order path's arithmetic: NumPy's operation order.
template <class T>
struct ReferenceOrderLammEvaluator {
    const SurrogateObjective<T>& objective;

    double start(const T* theta, T* r) const {
        objective.residual(theta, r);
        return objective.value(theta, r);
    }
    void gradient(const T* theta, const T* r, T* g) const { objective.gradient(theta, r, g); }
    double dot(const T* a, const T* b) const {
        return static_cast<double>(blas::dot(static_cast<blas::index_t>(objective.d), a, b));
    }
    double norm(const T* x) const { return euclidean_norm(objective.d, x); }
    double candidate_value(const T* candidate, const T*, const T*, T* candidate_residual) const {
        objective.residual(candidate, candidate_residual);
        return objective.value(candidate, candidate_residual);
    }
    T* pair_buffer() const { return nullptr; }
};

template <class T>
SolverResult lamm(const SurrogateObjective<T>& objective, const T* penalty_mask, double lambda_value, int max_iter,
                  double tol) {
    ReferenceOrderLammEvaluator<T> evaluator{objective};
    return lamm_iterations(evaluator, *objective.workspace, objective.d, objective.theta_prev, penalty_mask,
                           lambda_value, max_iter, tol);
}

}  // namespace rh::cpu

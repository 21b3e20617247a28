// LAMM, local adaptive majorize-minimize, for penalty "l1" (ALGORITHM.md,
// "L1 solver: LAMM", and amendment 0002), written once over an evaluator
// that supplies what costs:
//
//   double start(const T* theta)             f at the starting point
//   double move_to(const T* theta, const T* change)
//       f at a point the driver jumps to (an extrapolated point, or back
//       after a restart; change = theta - current point); it becomes current
//   void gradient(const T* theta, T* g)      grad f at the current point
//   double dot(const T* a, const T* b)       a' b (d entries), its rounding
//   double norm(const T* x)                  ||x||_2, its rounding
//   double trial(const T* candidate, const T* change, double phi,
//                const LammProposal<T>& propose)
//       f(candidate), change = candidate - current point; `propose` forms
//       the trial at any phi exactly as this driver does (an evaluator may
//       evaluate the next trial early)
//   void accept()                            the last trial's point becomes current
//
// The v1 iteration runs first, unchanged. When it stalls (lamm_stalled in
// solver_rules.hpp) the accelerated phase takes over: proximal steps from
// FISTA's extrapolated point theta + beta (theta - previous), momentum
// restarted whenever a step would raise the penalized objective, and the
// majorization slack at the rounding level of f (rounding_slack). The
// decisions are here and in solver_rules.hpp.
#pragma once

#include <cstdint>
#include <limits>
#include <utility>

#include "core/driver_buffers.hpp"
#include "core/host_device.hpp"
#include "core/soft_threshold.hpp"
#include "core/solve_rule.hpp"
#include "core/solver_result.hpp"
#include "core/solver_rules.hpp"
#include "core/surrogate_terms.hpp"

namespace rh::core {

// The trial point at a given phi from the current theta and gradient.
template <class T>
struct LammProposal {
    std::int64_t d = 0;
    const T* const* theta = nullptr;  // the driver's current theta (its buffers swap)
    const T* gradient = nullptr;
    const T* penalty_mask = nullptr;
    double lambda_value = 0.0;

    RH_HOST_DEVICE void operator()(double phi, T* candidate, T* change) const {
        lamm_proposal(d, *theta, gradient, penalty_mask, lambda_value, phi, candidate, change);
    }

    // The phi of the trial the driver tries next when the one at phi is
    // rejected (an evaluator that evaluates trials ahead asks here).
    RH_HOST_DEVICE static double next_phi(double phi) { return phi_after_rejection(phi); }
    // The phi the next iteration's trials start from after a trial at phi
    // was accepted (an evaluator that evaluates them ahead asks here).
    RH_HOST_DEVICE static double next_iteration_phi(double phi) { return phi_after_acceptance(phi); }
};

namespace detail {

// Up to kMaxMajorizationTrials trials from the current point (`propose`'s)
// with gradient g: true with the accepted trial in candidate/change, its f
// in candidate_value and its phi in phi; phi doubled after every rejection.
RH_EXEC_CHECK_DISABLE
template <class T, class Evaluator>
RH_HOST_DEVICE bool majorization_trials(Evaluator& evaluator, const LammProposal<T>& propose, const T* gradient,
                                        double value, double slack, double& phi, T* candidate, T* change,
                                        double& candidate_value) {
    for (int trial = 0; trial < kMaxMajorizationTrials; ++trial) {
        propose(phi, candidate, change);
        const double change_norm = evaluator.norm(change);
        const double bound = majorization_bound(value, evaluator.dot(gradient, change), phi, change_norm);
        candidate_value = evaluator.trial(candidate, change, phi, propose);
        if (majorization_holds(candidate_value, bound, slack)) return true;
        phi = phi_after_rejection(phi);
    }
    return false;
}

}  // namespace detail

RH_EXEC_CHECK_DISABLE
template <class T, class Evaluator>
RH_HOST_DEVICE SolverResult<T> lamm(Evaluator& evaluator, std::int64_t d, const T* theta_prev, const T* penalty_mask,
                                    double lambda_value, int max_iter, double tol, DriverBuffers<T> buffers) {
    T* theta = buffers.theta;
    T* candidate = buffers.candidate;
    T* change = buffers.step;
    T* gradient = buffers.gradient;
    for (std::int64_t j = 0; j < d; ++j) theta[j] = theta_prev[j];
    double value = evaluator.start(theta);
    const double start_scale = value < 0.0 ? -value : value;
    double phi = kInitialPhi;
    const T* current = theta;
    const LammProposal<T> propose{d, &current, gradient, penalty_mask, lambda_value};

    // The v1 iteration; the last kStallWindow + 1 accepted step norms kept
    // for the stall test.
    double step_norms[kStallWindow + 1];
    int iteration = 0;
    bool stalled = false;
    while (!stalled && iteration < max_iter) {
        ++iteration;
        evaluator.gradient(theta, gradient);
        double candidate_value = 0.0;
        if (!detail::majorization_trials(evaluator, propose, gradient, value, kMajorizationSlack, phi, candidate,
                                         change, candidate_value))
            return {theta, iteration, false, value, StopReason::majorization_exhausted};
        evaluator.accept();
        std::swap(theta, candidate);
        current = theta;
        value = candidate_value;
        const double step_norm = evaluator.norm(change), theta_norm = evaluator.norm(theta);
        if (step_converged(step_norm, theta_norm, tol)) return {theta, iteration, true, value};
        const int accepted = iteration;  // accepted steps so far (one per iteration)
        step_norms[accepted % (kStallWindow + 1)] = step_norm;
        const double window_ago = accepted > kStallWindow ? step_norms[(accepted - kStallWindow) % (kStallWindow + 1)]
                                                          : std::numeric_limits<double>::infinity();
        stalled = lamm_stalled(iteration, step_norm, window_ago, phi, theta_norm, tol);
        phi = phi_after_acceptance(phi);
    }
    if (!stalled) return {theta, max_iter, false, value, StopReason::max_iter};

    // The accelerated phase (amendment 0002).
    T* previous = buffers.previous;
    T* extrapolated = buffers.extrapolated;
    for (std::int64_t j = 0; j < d; ++j) previous[j] = theta[j];
    double momentum = 1.0;
    bool evaluator_at_theta = true;
    while (iteration < max_iter) {
        ++iteration;
        const double momentum_after = momentum_next(momentum);
        const double beta = (momentum - 1.0) / momentum_after;
        const bool extrapolate = beta > 0.0;
        double point_value = value;
        if (extrapolate) {
            const T scaled = static_cast<T>(beta);
            const T* from = evaluator_at_theta ? theta : current;
            for (std::int64_t j = 0; j < d; ++j) {
                const T point = theta[j] + scaled * (theta[j] - previous[j]);
                change[j] = point - from[j];
                extrapolated[j] = point;
            }
            point_value = evaluator.move_to(extrapolated, change);
            current = extrapolated;
        } else {
            // Back after a restart: f as the evaluator now forms it (the
            // reference's bits of `value`; a fast evaluator's own rounding,
            // consistent with the residual its trials start from).
            if (!evaluator_at_theta) {
                for (std::int64_t j = 0; j < d; ++j) change[j] = theta[j] - current[j];
                value = evaluator.move_to(theta, change);
            }
            point_value = value;
            current = theta;
        }
        evaluator_at_theta = !extrapolate;
        const double scale = point_value < 0.0 ? -point_value : point_value;
        const double slack = rounding_slack(start_scale > scale ? start_scale : scale, machine_epsilon<T>());
        evaluator.gradient(current, gradient);
        double candidate_value = 0.0;
        bool accepted = detail::majorization_trials(evaluator, propose, gradient, point_value, slack, phi, candidate,
                                                    change, candidate_value);
        if (accepted && extrapolate &&
            candidate_value + lambda_value * masked_l1_norm(d, candidate, penalty_mask) >
                value + lambda_value * masked_l1_norm(d, theta, penalty_mask))
            accepted = false;  // the momentum would raise the objective: restart
        if (!accepted) {
            if (!extrapolate) return {theta, iteration, false, value, StopReason::majorization_exhausted};
            for (std::int64_t j = 0; j < d; ++j) previous[j] = theta[j];
            momentum = 1.0;
            continue;
        }
        evaluator.accept();
        evaluator_at_theta = true;
        T* old_previous = previous;  // previous <- theta <- candidate <- (free)
        previous = theta;
        theta = candidate;
        candidate = old_previous;
        current = theta;
        value = candidate_value;
        momentum = momentum_after;
        phi = phi_after_acceptance(phi);
        if (step_converged(evaluator.norm(change), evaluator.norm(theta), tol)) return {theta, iteration, true, value};
    }
    return {theta, max_iter, false, value, StopReason::max_iter};
}

}  // namespace rh::core

// LAMM, local adaptive majorize-minimize, for penalty "l1" (ALGORITHM.md,
// "L1 solver: LAMM"), written once over an evaluator that supplies what
// costs:
//
//   double start(const T* theta)             f at the starting point
//   void gradient(const T* theta, T* g)      grad f at the current point
//   double dot(const T* a, const T* b)       a' b (d entries), its rounding
//   double norm(const T* x)                  ||x||_2, its rounding
//   double trial(const T* candidate, const T* change, double phi,
//                const LammProposal<T>& propose)
//       f(candidate); `propose` forms the trial at any phi exactly as this
//       driver does (an evaluator may evaluate the next trial early)
//   void accept()                            the last trial's point becomes current
//
// The decisions (proposal, majorization test, phi updates, convergence) are
// here and in solver_rules.hpp.
#pragma once

#include <cstdint>
#include <utility>

#include "core/driver_buffers.hpp"
#include "core/soft_threshold.hpp"
#include "core/solver_result.hpp"
#include "core/solver_rules.hpp"

namespace rh::core {

// The trial point at a given phi from the current theta and gradient.
template <class T>
struct LammProposal {
    std::int64_t d = 0;
    const T* const* theta = nullptr;  // the driver's current theta (its buffers swap)
    const T* gradient = nullptr;
    const T* penalty_mask = nullptr;
    double lambda_value = 0.0;

    void operator()(double phi, T* candidate, T* change) const {
        lamm_proposal(d, *theta, gradient, penalty_mask, lambda_value, phi, candidate, change);
    }
};

template <class T, class Evaluator>
SolverResult<T> lamm(Evaluator& evaluator, std::int64_t d, const T* theta_prev, const T* penalty_mask,
                     double lambda_value, int max_iter, double tol, DriverBuffers<T> buffers) {
    T* theta = buffers.theta;
    T* candidate = buffers.candidate;
    T* change = buffers.step;
    T* gradient = buffers.gradient;
    for (std::int64_t j = 0; j < d; ++j) theta[j] = theta_prev[j];
    double value = evaluator.start(theta);
    double phi = kInitialPhi;
    const T* current = theta;
    const LammProposal<T> propose{d, &current, gradient, penalty_mask, lambda_value};

    for (int iteration = 1; iteration <= max_iter; ++iteration) {
        evaluator.gradient(theta, gradient);
        bool accepted = false;
        double candidate_value = 0.0;
        for (int trial = 0; trial < kMaxMajorizationTrials; ++trial) {
            propose(phi, candidate, change);
            const double change_norm = evaluator.norm(change);
            const double bound = majorization_bound(value, evaluator.dot(gradient, change), phi, change_norm);
            candidate_value = evaluator.trial(candidate, change, phi, propose);
            if (majorization_holds(candidate_value, bound)) {
                accepted = true;
                break;
            }
            phi = phi_after_rejection(phi);
        }
        if (!accepted) return {theta, iteration, false, value};
        evaluator.accept();
        std::swap(theta, candidate);
        current = theta;
        value = candidate_value;
        phi = phi_after_acceptance(phi);
        if (step_converged(evaluator.norm(change), evaluator.norm(theta), tol)) return {theta, iteration, true, value};
    }
    return {theta, max_iter, false, value};
}

}  // namespace rh::core

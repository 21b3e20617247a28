// Damped Newton for penalty "none" (ALGORITHM.md, "Unpenalized solver"),
// written once over an evaluator that supplies what costs:
//
//   double start(const T* theta)
//       f at the starting point (the evaluator keeps its residual there)
//   core::SolveRoute direction(const T* theta, T* step)
//       step = H(theta)^-1 grad f(theta) through the solve ladder
//   double trial(double t, const T* candidate, double value)
//       f(candidate), candidate = theta - t step; or any number above
//       `value` when the evaluator can tell cheaply that f does not decrease
//   double accept(double t, const T* candidate, double trial_value)
//       the candidate of the accepted trial becomes the current point; returns
//       its f as the next iteration will compare against it
//   double norm(const T* x)
//       ||x||_2 in the evaluator's rounding (the convergence test)
//
// The decisions (halving, plain decrease, convergence) are here and in
// solver_rules.hpp; how the evaluator forms its values (one pass per trial,
// several steps per pass, a cheap bound first) is its own business.
#pragma once

#include <cstdint>
#include <utility>

#include "core/diagnostics.hpp"
#include "core/driver_buffers.hpp"
#include "core/solver_result.hpp"
#include "core/solver_rules.hpp"

namespace rh::core {

template <class T, class Evaluator>
SolverResult<T> damped_newton(Evaluator& evaluator, std::int64_t d, const T* theta_prev, int max_iter, double tol,
                              DriverBuffers<T> buffers, UpdateDiagnostics& diagnostics) {
    T* theta = buffers.theta;
    T* candidate = buffers.candidate;
    T* step = buffers.step;
    for (std::int64_t j = 0; j < d; ++j) theta[j] = theta_prev[j];
    double value = evaluator.start(theta);

    for (int iteration = 1; iteration <= max_iter; ++iteration) {
        diagnostics.record(evaluator.direction(theta, step));
        bool accepted = false;
        double t = 1.0, trial_value = 0.0;
        for (; t >= kSmallestStep; t /= 2.0) {
            const T scaled = static_cast<T>(t);
            bool rounds_to_theta = true;
            for (std::int64_t j = 0; j < d; ++j) {
                candidate[j] = theta[j] - scaled * step[j];
                rounds_to_theta = rounds_to_theta && candidate[j] == theta[j];
            }
            // A candidate that rounds to theta has f(candidate) = F: plain
            // decrease accepts it with a zero change, which is convergence.
            if (rounds_to_theta) return {theta, iteration, true, value};
            trial_value = evaluator.trial(t, candidate, value);
            if (plain_decrease(trial_value, value)) {
                accepted = true;
                break;
            }
        }
        if (!accepted) return {theta, iteration, false, value};

        value = evaluator.accept(t, candidate, trial_value);
        for (std::int64_t j = 0; j < d; ++j) step[j] = candidate[j] - theta[j];  // the change
        const double change = evaluator.norm(step);
        std::swap(theta, candidate);
        if (step_converged(change, evaluator.norm(theta), tol)) return {theta, iteration, true, value};
    }
    return {theta, max_iter, false, value};
}

}  // namespace rh::core

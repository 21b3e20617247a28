// Damped Newton for penalty "none" (ALGORITHM.md, "Unpenalized solver"),
// written once over an evaluator that supplies what costs:
//
//   double start(const T* theta)
//       f at the starting point (the evaluator keeps its residual there)
//   core::SolveRoute direction(const T* theta, T* step)
//       step = H(theta)^-1 grad f(theta) through the solve ladder
//   core::SolveRoute majorizer_direction(const T* theta, T* step)
//       step = M^-1 grad f(theta) through the solve ladder, with the gradient
//       direction() just formed and M = (Z' diag(w) Z + J_prev) / N + ridge I
//       (amendment 0002); the trials that follow are along this step
//   double trial(double t, const T* candidate, double value)
//       f(candidate), candidate = theta - t step; or any number above
//       `value` when the evaluator can tell cheaply that f does not decrease
//   double accept(double t, const T* candidate, double trial_value)
//       the candidate of the accepted trial becomes the current point; returns
//       its f as the next iteration will compare against it
//   double norm(const T* x)
//       ||x||_2 in the evaluator's rounding (the convergence test)
//
// The decisions (halving, plain decrease, the majorizer's step when the
// halving is exhausted, convergence) are here and in solver_rules.hpp; how
// the evaluator forms its values (one pass per trial, several steps per
// pass, a cheap bound first) is its own business.
#pragma once

#include <cstdint>
#include <utility>

#include "core/diagnostics.hpp"
#include "core/driver_buffers.hpp"
#include "core/solver_result.hpp"
#include "core/solver_rules.hpp"

namespace rh::core {

namespace detail {

enum class LineSearch { accepted, rounds_to_theta, exhausted };

// Halves t from 1 while t >= kSmallestStep until f(theta - t step) <= F.
// A candidate that rounds to theta has f(candidate) = F: plain decrease
// would accept it with a zero change, which is convergence.
template <class T, class Evaluator>
LineSearch halving_search(Evaluator& evaluator, std::int64_t d, const T* theta, const T* step, T* candidate,
                          double value, double& t, double& trial_value) {
    for (t = 1.0; t >= kSmallestStep; t /= 2.0) {
        const T scaled = static_cast<T>(t);
        bool rounds_to_theta = true;
        for (std::int64_t j = 0; j < d; ++j) {
            candidate[j] = theta[j] - scaled * step[j];
            rounds_to_theta = rounds_to_theta && candidate[j] == theta[j];
        }
        if (rounds_to_theta) return LineSearch::rounds_to_theta;
        trial_value = evaluator.trial(t, candidate, value);
        if (plain_decrease(trial_value, value)) return LineSearch::accepted;
    }
    return LineSearch::exhausted;
}

}  // namespace detail

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
        double t = 1.0, trial_value = 0.0;
        auto search = detail::halving_search(evaluator, d, theta, step, candidate, value, t, trial_value);
        if (search == detail::LineSearch::exhausted) {
            // Newton's direction gave no decrease at any t: the majorizer's
            // step decreases f in exact arithmetic (loss'' <= 1).
            diagnostics.record(evaluator.majorizer_direction(theta, step));
            ++diagnostics.majorizer_steps;
            search = detail::halving_search(evaluator, d, theta, step, candidate, value, t, trial_value);
            if (search == detail::LineSearch::exhausted)
                return {theta, iteration, false, value, StopReason::line_search_exhausted};
        }
        if (search == detail::LineSearch::rounds_to_theta) return {theta, iteration, true, value};

        value = evaluator.accept(t, candidate, trial_value);
        for (std::int64_t j = 0; j < d; ++j) step[j] = candidate[j] - theta[j];  // the change
        const double change = evaluator.norm(step);
        std::swap(theta, candidate);
        if (step_converged(change, evaluator.norm(theta), tol)) return {theta, iteration, true, value};
    }
    return {theta, max_iter, false, value, StopReason::max_iter};
}

}  // namespace rh::core

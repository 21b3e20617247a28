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
//   double trial(double t, const T* candidate, double value,
//                const SearchSteps<T>& steps)
//       f(candidate), candidate = theta - t step; or any number above
//       `value` when the evaluator can tell cheaply that f does not decrease.
//       `steps` is the search the trial belongs to (search_steps.hpp): an
//       evaluator may evaluate the steps that may follow t early
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
#include "core/host_device.hpp"
#include "core/search_steps.hpp"
#include "core/solver_result.hpp"
#include "core/solver_rules.hpp"

namespace rh::core {

namespace detail {

enum class LineSearch { accepted, rounds_to_theta, exhausted };

// Halves t from 1 while t >= kSmallestStep until f(theta - t step) <= F.
// A candidate that rounds to theta has f(candidate) = F: plain decrease
// would accept it with a zero change, which is convergence.
RH_EXEC_CHECK_DISABLE
template <class T, class Evaluator>
RH_HOST_DEVICE LineSearch halving_search(Evaluator& evaluator, std::int64_t d, const T* theta, const T* step,
                                         T* candidate, double value, double& t, double& trial_value) {
    const SearchSteps<T> steps = SearchSteps<T>::halving(d, theta, step);
    for (t = steps.first(); steps.in_range(t); t = steps.next(t)) {
        if (steps.form(t, candidate)) return LineSearch::rounds_to_theta;
        trial_value = evaluator.trial(t, candidate, value, steps);
        if (plain_decrease(trial_value, value)) return LineSearch::accepted;
    }
    return LineSearch::exhausted;
}

// The halving search along the majorizer's step; when t = 1 is accepted, t
// doubles while f keeps strictly decreasing (M overestimates the curvature,
// and where f is linear, as along a direction no inlier constrains, the step
// it gives is short). The evaluator's last trial is left at the accepted t.
RH_EXEC_CHECK_DISABLE
template <class T, class Evaluator>
RH_HOST_DEVICE LineSearch majorizer_search(Evaluator& evaluator, std::int64_t d, const T* theta, const T* step,
                                           T* candidate, double value, double& t, double& trial_value) {
    const LineSearch search = halving_search(evaluator, d, theta, step, candidate, value, t, trial_value);
    if (search != LineSearch::accepted || t != 1.0) return search;
    const SearchSteps<T> steps = SearchSteps<T>::doubling(d, theta, step);
    double best = trial_value, best_t = 1.0, last_t = 1.0;
    for (double u = steps.first(); steps.in_range(u); u = steps.next(u)) {
        steps.form(u, candidate);
        const double next = evaluator.trial(u, candidate, best, steps);
        last_t = u;
        if (!(plain_decrease(next, best) && next < best)) break;
        best = next;
        best_t = u;
    }
    if (last_t != best_t) {  // the evaluator's last trial must be the accepted one
        steps.form(best_t, candidate);
        best = evaluator.trial(best_t, candidate, value, steps);
    }
    t = best_t;
    trial_value = best;
    return search;
}

}  // namespace detail

RH_EXEC_CHECK_DISABLE
template <class T, class Evaluator>
RH_HOST_DEVICE SolverResult<T> damped_newton(Evaluator& evaluator, std::int64_t d, const T* theta_prev, int max_iter,
                                             double tol, DriverBuffers<T> buffers, UpdateDiagnostics& diagnostics) {
    T* theta = buffers.theta;
    T* candidate = buffers.candidate;
    T* step = buffers.step;
    for (std::int64_t j = 0; j < d; ++j) theta[j] = theta_prev[j];
    double value = evaluator.start(theta);

    // A Newton step from the least-squares route can miss the gradient's part
    // in the dropped directions (where the current curvature vanishes but f
    // still slopes): its smallness certifies nothing. The next iteration then
    // takes the majorizer's step, whose null space is flat in f, and only it
    // may declare convergence.
    bool certify = false;
    for (int iteration = 1; iteration <= max_iter; ++iteration) {
        const SolveRoute route = evaluator.direction(theta, step);
        diagnostics.record(route);
        bool by_majorizer = certify;
        if (by_majorizer) {
            diagnostics.record(evaluator.majorizer_direction(theta, step));
            ++diagnostics.majorizer_steps;
        }
        double t = 1.0, trial_value = 0.0;
        auto search = by_majorizer
                          ? detail::majorizer_search(evaluator, d, theta, step, candidate, value, t, trial_value)
                          : detail::halving_search(evaluator, d, theta, step, candidate, value, t, trial_value);
        if (search == detail::LineSearch::exhausted && !by_majorizer) {
            // Newton's direction gave no decrease at any t: the majorizer's
            // step decreases f in exact arithmetic (loss'' <= 1).
            diagnostics.record(evaluator.majorizer_direction(theta, step));
            ++diagnostics.majorizer_steps;
            by_majorizer = true;
            search = detail::majorizer_search(evaluator, d, theta, step, candidate, value, t, trial_value);
        }
        if (search == detail::LineSearch::exhausted)
            return {theta, iteration, false, value, StopReason::line_search_exhausted};
        certify = route == SolveRoute::least_squares && !by_majorizer;
        if (search == detail::LineSearch::rounds_to_theta) {
            if (certify) continue;
            return {theta, iteration, true, value};
        }

        value = evaluator.accept(t, candidate, trial_value);
        for (std::int64_t j = 0; j < d; ++j) step[j] = candidate[j] - theta[j];  // the change
        const double change = evaluator.norm(step);
        std::swap(theta, candidate);
        if (step_converged(change, evaluator.norm(theta), tol)) {
            if (certify) continue;
            return {theta, iteration, true, value};
        }
        certify = false;
    }
    return {theta, max_iter, false, value, StopReason::max_iter};
}

}  // namespace rh::core

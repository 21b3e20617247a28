"""The solvers' constants and decisions, written once for the Python engines.

The same rules, with the same names, are in native/core/solver_rules.hpp
and native/core/solve_rule.hpp for the C++ engines (host and device);
docs/amendments/0002-robust-solver.md states them for a third engine. Every
function here takes and returns Python scalars: the decisions never depend
on the array library.
"""

from __future__ import annotations

import math

# ---------------------------------------------------------------- solve ladder

#: machine epsilon of each model dtype (what "working precision" means)
EPSILON = {"float64": 2.220446049250313e-16, "float32": 1.1920928955078125e-07}


def singular_rcond_threshold(n_parameters: int, dtype_name: str) -> float:
    """eps * d: the reciprocal condition number at or below which a Newton
    system is singular to working precision (also the cutoff the
    minimum-norm least-squares solve applies to singular values)."""
    return EPSILON[dtype_name] * n_parameters


def regular_solve_allowed(rcond: float, n_parameters: int, dtype_name: str) -> bool:
    """A regular (LU or Cholesky) solve is used only when the exact 1-norm
    reciprocal condition number is above eps * d (NaN is not)."""
    return rcond > singular_rcond_threshold(n_parameters, dtype_name)


# ---------------------------------------------------------------- damped Newton

#: the line search halves t from 1 while t >= SMALLEST_STEP
SMALLEST_STEP = 1e-8
#: the majorizer's search (amendment 0002) doubles an accepted t = 1 while
#: f keeps strictly decreasing, up to this t
LARGEST_MAJORIZER_STEP = 2.0**20


def plain_decrease(candidate_value: float, value: float) -> bool:
    """A trial is accepted when f does not rise; a non-finite f never is."""
    return math.isfinite(candidate_value) and candidate_value <= value


def step_converged(change_norm: float, theta_norm: float, tol: float) -> bool:
    """Both solvers stop when ||theta_new - theta|| <= tol (1 + ||theta_new||)."""
    return change_norm <= tol * (1.0 + theta_norm)


# ---------------------------------------------------------------- LAMM

INITIAL_PHI = 1.0
MAX_MAJORIZATION_TRIALS = 40
#: the contract's (v1) absolute slack of the majorization test
MAJORIZATION_SLACK = 1e-12
SMALLEST_PHI = 1e-8

#: Accelerated phase (amendment 0002): plain LAMM iterations before a stall
#: may be declared, the window over which progress is measured, and what
#: counts as a stall (the step did not halve over the window).
PLAIN_LAMM_ITERATIONS = 25
STALL_WINDOW = 10
STALL_STEP_RATIO = 0.5
#: steps whose majorization margin phi/2 ||step||^2 is below this many v1
#: slacks are at the v1 test's resolution (the slack decides them)
RESOLVED_MARGIN_SLACKS = 100.0
#: the v1 test's resolution radius may exceed the requested step threshold
#: tol (1 + ||theta||) by at most this factor for the accelerated phase to
#: take over from it (see the amendment: the external corpus pins the v1
#: iteration below that)
RESOLUTION_REACH = 16.0
#: the accelerated phase's slack: this many epsilons of the objective's scale
ROUNDING_SLACK_EPSILONS = 16.0


def majorization_bound(value: float, gradient_dot_change: float, phi: float, change_norm: float) -> float:
    """LAMM's majorizer of f along `change`: F + g' change + (phi / 2) ||change||^2."""
    return value + gradient_dot_change + (0.5 * phi) * (change_norm * change_norm)


def majorization_holds(candidate_value: float, bound: float, slack: float = MAJORIZATION_SLACK) -> bool:
    """f(candidate) <= bound + slack; a non-finite f never holds."""
    return math.isfinite(candidate_value) and candidate_value <= bound + slack


def phi_after_rejection(phi: float) -> float:
    return 2.0 * phi


def phi_after_acceptance(phi: float) -> float:
    return max(phi / 2.0, SMALLEST_PHI)


def rounding_slack(objective_scale: float, dtype_name: str) -> float:
    """The accelerated phase's majorization slack: 16 eps of the objective's
    scale max(|F_start|, |F|) (the rounding of f and of its bound), but
    never looser than the v1 slack."""
    return min(MAJORIZATION_SLACK, ROUNDING_SLACK_EPSILONS * EPSILON[dtype_name] * objective_scale)


def lamm_stalled(
    iteration: int, step_norm: float, step_norm_window_ago: float, phi: float, theta_norm: float, tol: float
) -> bool:
    """Whether plain LAMM hands over to the accelerated phase after this
    accepted iteration (`phi` is the accepted trial's).

    After PLAIN_LAMM_ITERATIONS iterations, either
    * slow progress the v1 test still resolves: the step did not halve over
      the last STALL_WINDOW iterations and its majorization margin
      phi/2 ||step||^2 exceeds RESOLVED_MARGIN_SLACKS v1 slacks; or
    * the v1 test's resolution: the margin is below that, and the radius
      sqrt(2 slack / phi) the v1 slack cannot resolve is within
      RESOLUTION_REACH of the step threshold tol (1 + ||theta||).
    """
    if iteration < PLAIN_LAMM_ITERATIONS:
        return False
    margin = 0.5 * phi * step_norm * step_norm
    if margin > RESOLVED_MARGIN_SLACKS * MAJORIZATION_SLACK:
        return step_norm > STALL_STEP_RATIO * step_norm_window_ago
    # resolution <= reach * threshold, compared squared (as every engine does)
    threshold = RESOLUTION_REACH * tol * (1.0 + theta_norm)
    return 2.0 * MAJORIZATION_SLACK / phi <= threshold * threshold


def masked_l1_norm(theta: list, mask: list) -> float:
    """sum_j |theta_j| m_j in double, in index order (every engine sums it so:
    the accelerated phase's restart test compares penalized objectives)."""
    total = 0.0
    for value, weight in zip(theta, mask):
        total += abs(float(value)) * float(weight)
    return total


def momentum_next(t: float) -> float:
    """FISTA's t_{k+1} = (1 + sqrt(1 + 4 t_k^2)) / 2."""
    return 0.5 * (1.0 + math.sqrt(1.0 + 4.0 * t * t))


# ---------------------------------------------------------------- outcomes

#: why a solver stopped (UpdateDiagnostics.stop_reason)
CONVERGED = "converged"
MAX_ITER = "max_iter"
LINE_SEARCH_EXHAUSTED = "line_search_exhausted"
MAJORIZATION_EXHAUSTED = "majorization_trials_exhausted"
STOP_REASONS = (CONVERGED, MAX_ITER, LINE_SEARCH_EXHAUSTED, MAJORIZATION_EXHAUSTED)

"""Diagnostics of one renewable update."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any


@dataclass(frozen=True)
class UpdateDiagnostics:
    """What happened while one batch was absorbed.

    Attributes
    ----------
    iterations : int
        Newton or LAMM iterations run on this batch.
    converged : bool
        Whether the step-size criterion was met before ``max_iter`` (or the
        step rounded to the current point: no representable progress left).
    objective : float
        Surrogate objective at the solution (plus the L1 term for "l1").
    lambda_value : float
        L1 level of this batch (0.0 for penalty "none").
    bandwidth : float
        Curvature bandwidth h of this batch.
    used_regularized_fallback : bool
        True when any Newton system of this batch was singular and was solved
        by the minimum-norm least-squares fallback.
    solve_route : str
        How the Newton systems were solved: "cholesky", "lu", "least_squares"
        (the fallback ran at least once), or "none" (penalty "l1" solves none).
    stop_reason : str
        Why the solver stopped: "converged", "max_iter" (the iteration
        budget ran out), "line_search_exhausted" (neither the Newton nor the
        majorizer step decreased f at any step length down to 1e-8) or
        "majorization_trials_exhausted" (40 LAMM trials in a row failed the
        majorization test).
    """

    iterations: int
    converged: bool
    objective: float
    lambda_value: float
    bandwidth: float
    used_regularized_fallback: bool = False
    solve_route: str = "none"
    stop_reason: str = "converged"

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)



#: what each non-converged stop means, and what helps (the ConvergenceWarning's text)
_ADVICE = {
    ("max_iter", "none"): (
        "max_iter={max_iter} Newton iterations were used up; increase max_iter (a ridge much larger than the "
        "data's curvature also slows Newton down)"
    ),
    ("max_iter", "l1"): (
        "max_iter={max_iter} LAMM iterations were used up; LAMM is a first-order method and ill-conditioned "
        "designs (uncentred or strongly correlated features) need more: increase max_iter (e.g. 1000), or "
        "centre and scale the features"
    ),
    ("line_search_exhausted", "none"): (
        "neither the Newton step nor the majorizer step decreased the objective at any step length down to "
        "1e-8: the decrease left is below the objective's rounding, so tol is tighter than this dtype resolves "
        "here; increase tol (or use dtype='float64')"
    ),
    ("majorization_trials_exhausted", "l1"): (
        "40 LAMM trials in a row failed the majorization test: the objective's values are dominated by "
        "rounding there; increase tol (or use dtype='float64'), or check the scale of the data"
    ),
}


def convergence_message(estimator: str, batch: int, diagnostics: UpdateDiagnostics, penalty: str,
                        max_iter: int) -> str:
    """The ConvergenceWarning for a batch that did not converge: why, and what helps."""
    reason = diagnostics.stop_reason
    advice = _ADVICE.get((reason, penalty), "increase max_iter or tol").format(max_iter=max_iter)
    return (f"{estimator} did not converge on batch {batch} after {diagnostics.iterations} iterations "
            f"(stop_reason={reason!r}): {advice}")

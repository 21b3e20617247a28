"""The solve ladder of a Newton (or majorizer) system A x = b, written once
for the Python engines (amendment 0002, "One solve ladder").

    rcond = 1 / (||A||_1 ||A^-1||_1)   (exact, from the computed inverse;
                                        0 when A is exactly singular or
                                        the inverse is not finite)
    regular solve (LU with partial pivoting)  when rcond > eps * d and the
                                               solution is finite
    minimum-norm least squares (SVD, singular values below eps * d of the
    largest treated as zero)                  otherwise

The route is "lu" or "least_squares". A system that is not finite (finite
inputs so large that they overflow it) reaches no SVD (LAPACK's may never
return on one): NumericalOverflowError, with every engine's message.
"""

from __future__ import annotations

from ..exceptions import NumericalOverflowError, system_overflow_message
from .array_ops import Array, ArrayOps
from .solver_rules import regular_solve_allowed

LU = "lu"
LEAST_SQUARES = "least_squares"


def solve_with_fallback(ops: ArrayOps, a: Array, b: Array) -> tuple[Array, str]:
    """x with A x = b, and the route that produced it."""
    n_parameters = a.shape[0]
    if regular_solve_allowed(ops.reciprocal_condition(a), n_parameters, ops.dtype_name):
        x = ops.solve(a, b)
        if x is not None and ops.all_finite(x):
            return x, LU
    if not (ops.all_finite(a) and ops.all_finite(b)):
        raise NumericalOverflowError(system_overflow_message(ops.dtype_name))
    return ops.least_squares(a, b), LEAST_SQUARES

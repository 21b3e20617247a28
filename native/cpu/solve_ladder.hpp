// solve_with_fallback: the Newton system A x = b by the cheapest route that
// is safe (ALGORITHM.md, "solve"):
//   1. Cholesky, only when A is exactly symmetric, the factorization succeeds
//      and its pivots show a well-conditioned matrix (so it cannot differ in
//      kind from the reference's LU answer);
//   2. LU with partial pivoting (what the NumPy reference runs);
//   3. minimum-norm least squares by SVD (gelsd, rcond = eps * d) when A is
//      exactly singular or a solution is not finite.
#pragma once

#include <cstdint>

#include "core/diagnostics.hpp"
#include "cpu/workspace.hpp"

namespace rh::cpu {

// A is d x d row-major (left intact); b has length d; x receives the solution.
template <class T>
core::SolveRoute solve_with_fallback(std::int64_t d, const T* A, const T* b, T* x, Workspace<T>& workspace);

}  // namespace rh::cpu

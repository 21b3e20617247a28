// solve_with_fallback: the Newton system A x = b (ALGORITHM.md, "solve"):
//   1. (only with prefer_cholesky) Cholesky, when A is exactly symmetric, the
//      factorization succeeds and its pivots show a well-conditioned matrix;
//   2. LU with partial pivoting (what the NumPy reference runs);
//   3. minimum-norm least squares by SVD (gelsd, rcond = eps * d) when A is
//      exactly singular or a solution is not finite.
#pragma once

#include <cstdint>

#include "core/diagnostics.hpp"
#include "cpu/workspace.hpp"

namespace rh::cpu {

// The engine solves with prefer_cholesky = false: the Newton line search
// compares objective values at noise level, so a step that differs from the
// reference's LU step in its last bits can change an accept/reject decision;
// the project corpus (many_small_batches_f64) misses its tolerance with the
// Cholesky route and replays with LU. For d <= a few hundred the solve is a
// small share of an iteration (the Gram costs rows x d^2 / 2).
//
// A is d x d row-major (left intact); b has length d; x receives the solution.
template <class T>
core::SolveRoute solve_with_fallback(std::int64_t d, const T* A, const T* b, T* x, Workspace<T>& workspace,
                                     bool prefer_cholesky = false);

// The fast path's ladder. A is d x d row-major and only its upper triangle
// is read (the Newton matrix is symmetric by construction there). With
// "singular to working precision" meaning a LAPACK 1-norm reciprocal
// condition estimate (pocon/gecon) <= eps * d, the cutoff gelsd applies:
//   1. Cholesky (potrf/potrs; up to d = 32 an inline factorization whose
//      reciprocal condition number is computed exactly from the inverse
//      factor) when it succeeds, the matrix is not singular to working
//      precision and the solution is finite;
//   2. LU with partial pivoting on the same terms;
//   3. minimum-norm least squares by SVD (gelsd, rcond = eps * d).
// Unlike the reference's LU (which only falls back on an exactly zero
// pivot), a numerically singular system always takes the minimum-norm route.
template <class T>
core::SolveRoute solve_symmetric_with_fallback(std::int64_t d, const T* A_upper, const T* b, T* x,
                                               Workspace<T>& workspace);

}  // namespace rh::cpu

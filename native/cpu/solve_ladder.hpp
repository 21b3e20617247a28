// The solve ladder of the Newton system A x = b (ALGORITHM.md, "solve"),
// with the buffers it factors in (grown once per parameter count).
#pragma once

#include <cstdint>
#include <vector>

#include "core/diagnostics.hpp"
#include "cpu/buffer_growth.hpp"
#include "cpu/platform/blas_provider.hpp"

namespace rh::cpu {

template <class T>
class SolveLadder {
public:
    void reserve(BufferGrowth& growth, std::int64_t d);

    // Both ladders take the contract's decision (core/solve_rule.hpp): a
    // regular route only when the 1-norm reciprocal condition number of A
    // (from the route's own factorization) is above eps * d and the solution
    // is finite; else minimum-norm least squares (gelsd, singular values
    // below eps * d of the largest dropped). The rcond is LAPACK's estimate
    // (gecon/pocon) unless that is within 1000x of the threshold, where it
    // is computed exactly (solves on the columns of the identity); up to
    // d = 32 the fast ladder's Cholesky rung computes it exactly always.
    //
    // The reference order's ladder (A d x d row-major, left intact):
    //   1. (only with prefer_cholesky) Cholesky, when A is exactly
    //      symmetric, the factorization succeeds and its pivots show a
    //      well-conditioned matrix;
    //   2. LU with partial pivoting (what the NumPy reference runs; NumPy's
    //      reference computes the exact rcond from numpy.linalg.inv);
    //   3. minimum-norm least squares by SVD.
    // The engine solves with prefer_cholesky = false: the Newton line search
    // compares objective values at noise level, so a step that differs from
    // the reference's LU step in its last bits can change an accept/reject
    // decision.
    core::SolveRoute solve_general(std::int64_t d, const T* A, const T* b, T* x, bool prefer_cholesky = false);

    // The fast path's ladder. Only A's upper triangle is read (the Newton
    // matrix is symmetric by construction there). With "singular to working
    // precision" meaning a 1-norm reciprocal condition number <= eps * d
    // (as above):
    //   1. Cholesky when it succeeds, the matrix is not singular to working
    //      precision and the solution is finite;
    //   2. LU with partial pivoting on the same terms;
    //   3. minimum-norm least squares by SVD (gelsd, rcond = eps * d).
    core::SolveRoute solve_symmetric(std::int64_t d, const T* A_upper, const T* b, T* x);

    // Factor, mirrored matrix, inverse factor (d x d each; its first
    // column also holds the columns of A^-1 one at a time), pivots, the
    // column sums of the 1-norm, the condition estimates' work, and gelsd's.
    std::vector<T> factor, full, factor_inverse;
    std::vector<blas::index_t> pivots, least_squares_iwork, condition_iwork;
    std::vector<T> singular_values, least_squares_work, condition_work;
    std::vector<double> column_sums;

private:
    std::int64_t least_squares_size_ = -1;
};

extern template class SolveLadder<float>;
extern template class SolveLadder<double>;

}  // namespace rh::cpu

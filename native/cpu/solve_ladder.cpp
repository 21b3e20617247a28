#include "cpu/solve_ladder.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include "core/invariants.hpp"
#include "core/solve_rule.hpp"
#include "core/status.hpp"

namespace rh::cpu {

namespace {

template <class T>
bool exactly_symmetric(std::int64_t d, const T* A) {
    for (std::int64_t i = 0; i < d; ++i)
        for (std::int64_t j = i + 1; j < d; ++j)
            if (A[i * d + j] != A[j * d + i]) return false;
    return true;
}

// Cholesky pivots L_ii bound the condition number from below by
// (max L_ii / min L_ii)^2; beyond the threshold the LU route decides.
template <class T>
bool well_conditioned_cholesky(std::int64_t d, const T* factor) {
    T smallest = std::numeric_limits<T>::infinity(), largest = T(0);
    for (std::int64_t i = 0; i < d; ++i) {
        const T pivot = factor[i * d + i];
        smallest = std::min(smallest, pivot);
        largest = std::max(largest, pivot);
    }
    const double ratio = static_cast<double>(smallest) / static_cast<double>(largest);
    const double eps = std::numeric_limits<T>::epsilon();
    return ratio * ratio > 1e3 * static_cast<double>(d) * eps;
}

// full = the symmetric matrix whose upper triangle (row-major) is A's, tile
// by tile: one entry at a time, the lower triangle's writes went down the
// columns of a d = 257 matrix (60% of solve_symmetric's own time, perf).
template <class T>
void mirror_upper(std::int64_t d, const T* A, T* full) {
    constexpr std::int64_t kTile = 32;
    for (std::int64_t i0 = 0; i0 < d; i0 += kTile) {
        const std::int64_t i1 = std::min(d, i0 + kTile);
        for (std::int64_t j0 = i0; j0 < d; j0 += kTile) {
            const std::int64_t j1 = std::min(d, j0 + kTile);
            for (std::int64_t i = i0; i < i1; ++i)
                for (std::int64_t j = std::max(i, j0); j < j1; ++j) full[i * d + j] = A[i * d + j];
            for (std::int64_t j = j0; j < j1; ++j)
                for (std::int64_t i = i0; i < std::min(i1, j + 1); ++i) full[j * d + i] = A[i * d + j];
        }
    }
}

template <class T>
void transpose_into(std::int64_t d, const T* A, T* out) {
    for (std::int64_t i = 0; i < d; ++i)
        for (std::int64_t j = 0; j < d; ++j) out[j * d + i] = A[i * d + j];
}

// The 1-norm of a row-major d x d matrix (its largest column sum), in double.
template <class T>
double one_norm(std::int64_t d, const T* A, double* column_sums) {
    std::fill(column_sums, column_sums + d, 0.0);
    for (std::int64_t i = 0; i < d; ++i)
        for (std::int64_t j = 0; j < d; ++j) column_sums[j] += std::fabs(static_cast<double>(A[i * d + j]));
    return *std::max_element(column_sums, column_sums + d);
}

// The exact reciprocal 1-norm condition number (core/solve_rule.hpp) from a
// factorization: A^-1 = solve(I), every column in one call (as NumPy's inv
// does it: one factor pass and BLAS-3 triangular solves; d single-column
// solves each repacked the factor, 32% of a wide float32 update's time),
// then ||A^-1||_1 is its largest absolute column sum. `inverse`: d x d,
// column-major.
template <class T, class SolveColumns>
double exact_rcond(std::int64_t d, double norm, T* inverse, SolveColumns&& solve_columns) {
    std::fill(inverse, inverse + d * d, T(0));
    for (std::int64_t k = 0; k < d; ++k) inverse[k * d + k] = T(1);
    solve_columns(inverse, static_cast<blas::index_t>(d));
    double inverse_norm = 0.0;
    for (std::int64_t k = 0; k < d; ++k) {
        const T* column = inverse + k * d;
        double sum = 0.0;
        for (std::int64_t i = 0; i < d; ++i) sum += std::fabs(static_cast<double>(column[i]));
        inverse_norm = std::max(inverse_norm, sum);
        if (!(sum - sum == 0.0)) return 0.0;  // an infinite or NaN column
    }
    return core::reciprocal_condition(norm, inverse_norm);
}

// The contract's decision from LAPACK's estimate (`estimate()`), with the
// exact rcond (`exact()`) computed only in the borderline band
// (core/solve_rule.hpp).
template <class T, class Estimate, class Exact>
bool regular_route_allowed(std::int64_t d, Estimate&& estimate, Exact&& exact) {
    switch (core::classify_rcond_estimate<T>(static_cast<double>(estimate()), d)) {
        case core::RcondEstimate::singular: return false;
        case core::RcondEstimate::regular: return true;
        case core::RcondEstimate::borderline: break;
    }
    return core::regular_solve_allowed<T>(exact(), d);
}

// The last rung of both ladders: the minimum-norm least-squares solution
// (gelsd) of the column-major system in `factor`, singular values below
// rcond * the largest treated as zero.
template <class T>
core::SolveRoute solve_minimum_norm(std::int64_t d, T* factor, const T* b, T* x, T rcond, SolveLadder<T>& ws) {
    // LAPACK's SVD on inf/NaN may never return (found by the libFuzzer target
    // tests/fuzz/fuzz_cpu_update.cpp: extreme finite inputs overflow the system)
    if (!core::all_finite(factor, d * d) || !core::all_finite(b, d))
        throw core::EngineError(core::Status::numerical_failure, core::system_overflow_message<T>());
    std::copy(b, b + d, x);
    const auto info = blas::least_squares_solve(static_cast<blas::index_t>(d), factor, x, rcond,
                                                ws.singular_values.data(), ws.least_squares_work.data(),
                                                static_cast<blas::index_t>(ws.least_squares_work.size()),
                                                ws.least_squares_iwork.data());
    if (info != 0 || !core::all_finite(x, d))
        throw core::EngineError(core::Status::numerical_failure,
                                "the Newton system could not be solved (SVD least squares did not converge)");
    return core::SolveRoute::least_squares;
}

// Systems up to this size take the small Cholesky rung below: for them
// LAPACK's per-call work (potrf + pocon + potrs) outweighs the arithmetic.
constexpr std::int64_t kSmallSystem = 32;

// A = L L' for the full symmetric d x d matrix A (row-major); L lower
// triangular, row-major. False when A is not positive definite in working
// precision (a pivot <= 0 or not finite). Each entry is a dot product of
// two contiguous rows of L, summed as a vector reduction.
template <class T>
bool small_cholesky(std::int64_t d, const T* A, T* L) {
    for (std::int64_t j = 0; j < d; ++j) {
        const T* row_j = L + j * d;
        T squares = T(0);
#pragma omp simd reduction(+ : squares)
        for (std::int64_t k = 0; k < j; ++k) squares += row_j[k] * row_j[k];
        const T pivot = A[j * d + j] - squares;
        if (!(pivot > T(0)) || !std::isfinite(pivot)) return false;
        const T diagonal = std::sqrt(pivot);
        L[j * d + j] = diagonal;
        for (std::int64_t i = j + 1; i < d; ++i) {
            const T* row_i = L + i * d;
            T sum = T(0);
#pragma omp simd reduction(+ : sum)
            for (std::int64_t k = 0; k < j; ++k) sum += row_i[k] * row_j[k];
            L[i * d + j] = (A[i * d + j] - sum) / diagonal;
        }
    }
    return true;
}

// The exact reciprocal 1-norm condition number 1 / (|A|_1 |A^-1|_1) from
// A's Cholesky factor: M = L^-1 row by row (row i of M is a combination of
// the rows above it), then A^-1 = M' M accumulated row by row of M as
// outer products (every inner loop runs over contiguous memory, with no
// reduction). (LAPACK's pocon estimates |A^-1|_1 from below; the exact
// value is at most as optimistic.)
template <class T>
double small_cholesky_rcond(std::int64_t d, const T* L, double norm, T* inverse) {
    std::fill(inverse, inverse + d * d, T(0));
    T accumulated[kSmallSystem];
    for (std::int64_t i = 0; i < d; ++i) {
        T* row = inverse + i * d;  // M[i, :], zero right of i
        std::fill(accumulated, accumulated + i, T(0));
        for (std::int64_t k = 0; k < i; ++k) {
            const T factor = L[i * d + k];
            const T* above = inverse + k * d;
#pragma omp simd
            for (std::int64_t j = 0; j <= k; ++j) accumulated[j] += factor * above[j];
        }
        const T diagonal = L[i * d + i];
        for (std::int64_t j = 0; j < i; ++j) row[j] = -accumulated[j] / diagonal;
        row[i] = T(1) / diagonal;
    }
    double product[kSmallSystem * kSmallSystem];
    std::fill(product, product + d * d, 0.0);
    for (std::int64_t k = 0; k < d; ++k) {
        const T* row = inverse + k * d;
        for (std::int64_t a = 0; a <= k; ++a) {
            const double factor = static_cast<double>(row[a]);
            double* target = product + a * d;
#pragma omp simd
            for (std::int64_t b = 0; b <= k; ++b) target[b] += factor * static_cast<double>(row[b]);
        }
    }
    double inverse_norm = 0.0;
    for (std::int64_t b = 0; b < d; ++b) {
        double total = 0.0;
        for (std::int64_t a = 0; a < d; ++a) total += std::fabs(product[a * d + b]);
        inverse_norm = std::max(inverse_norm, total);
    }
    if (!(norm > 0.0) || !(inverse_norm > 0.0) || !std::isfinite(inverse_norm)) return 0.0;
    return 1.0 / (norm * inverse_norm);
}

// x = A^-1 x from A = L L': L y = x, then L' x = y.
template <class T>
void small_cholesky_solve(std::int64_t d, const T* L, T* x) {
    for (std::int64_t i = 0; i < d; ++i) {
        T sum = x[i];
        for (std::int64_t k = 0; k < i; ++k) sum -= L[i * d + k] * x[k];
        x[i] = sum / L[i * d + i];
    }
    for (std::int64_t i = d - 1; i >= 0; --i) {
        T sum = x[i];
        for (std::int64_t k = i + 1; k < d; ++k) sum -= L[k * d + i] * x[k];
        x[i] = sum / L[i * d + i];
    }
}

}  // namespace

template <class T>
void SolveLadder<T>::reserve(BufferGrowth& growth, std::int64_t d) {
    for (auto* buffer : {&factor, &full, &factor_inverse}) growth.grow(*buffer, d * d);
    growth.grow(pivots, d);
    growth.grow(column_sums, d);
    growth.grow(condition_work, 4 * d);
    growth.grow(condition_iwork, d);
    if (least_squares_size_ < d) {
        const auto sizes = blas::least_squares_workspace(static_cast<blas::index_t>(d), T{});
        growth.grow(least_squares_work, sizes.work);
        growth.grow(least_squares_iwork, sizes.iwork);
        growth.grow(singular_values, sizes.singular_values);
        least_squares_size_ = d;
    }
}

template <class T>
core::SolveRoute SolveLadder<T>::solve_general(std::int64_t d, const T* A, const T* b, T* x, bool prefer_cholesky) {
    SolveLadder<T>& ws = *this;
    const auto n = static_cast<blas::index_t>(d);
    double* column_sums = ws.column_sums.data();
    const double norm = one_norm(d, A, column_sums);
    T* inverse = ws.factor_inverse.data();
    if (prefer_cholesky && exactly_symmetric(d, A)) {
        T* factor = this->factor.data();
        std::copy(A, A + d * d, factor);
        if (blas::cholesky_factor(n, factor) == 0 && well_conditioned_cholesky(d, factor) &&
            regular_route_allowed<T>(
                d,
                [&] { return blas::cholesky_rcond(n, factor, static_cast<T>(norm), ws.condition_work.data(),
                                                  ws.condition_iwork.data()); },
                [&] {
                    return exact_rcond(d, norm, inverse,
                                       [&](T* v, blas::index_t columns) { blas::cholesky_solve(n, factor, v, columns); });
                })) {
            std::copy(b, b + d, x);
            blas::cholesky_solve(n, factor, x);
            if (core::all_finite(x, d)) return core::SolveRoute::cholesky;
        }
    }
    T* factor = this->factor.data();
    transpose_into(d, A, factor);  // LAPACK wants column-major A, as NumPy passes it
    if (blas::lu_factor(n, factor, ws.pivots.data()) == 0 &&
        regular_route_allowed<T>(
            d,
            [&] { return blas::lu_rcond(n, factor, static_cast<T>(norm), ws.condition_work.data(),
                                        ws.condition_iwork.data()); },
            [&] {
                return exact_rcond(d, norm, inverse, [&](T* v, blas::index_t columns) {
                    blas::lu_solve(n, factor, ws.pivots.data(), v, columns);
                });
            })) {
        std::copy(b, b + d, x);
        blas::lu_solve(n, factor, ws.pivots.data(), x);
        if (core::all_finite(x, d)) return core::SolveRoute::lu;
    }
    transpose_into(d, A, factor);
    return solve_minimum_norm(d, factor, b, x, static_cast<T>(core::singular_rcond_threshold<T>(d)), ws);
}

template <class T>
core::SolveRoute SolveLadder<T>::solve_symmetric(std::int64_t d, const T* A, const T* b, T* x) {
    SolveLadder<T>& ws = *this;
    const auto n = static_cast<blas::index_t>(d);
    T* full = this->full.data();
    // The mirrored matrix (its own transpose: row-major = column-major) and its 1-norm.
    mirror_upper(d, A, full);
    T norm = T(0);
    for (std::int64_t i = 0; i < d; ++i) {
        T row = T(0);
        for (std::int64_t j = 0; j < d; ++j) row += std::fabs(full[i * d + j]);
        norm = std::max(norm, row);
    }
    T* factor = this->factor.data();
    // Singular to working precision (core/solve_rule.hpp): the cutoff gelsd applies.
    const T smallest_rcond = static_cast<T>(core::singular_rcond_threshold<T>(d));
    if (d <= kSmallSystem) {
        if (small_cholesky(d, full, factor) &&
            core::regular_solve_allowed<T>(
                small_cholesky_rcond(d, factor, static_cast<double>(norm), ws.factor_inverse.data()), d)) {
            std::copy(b, b + d, x);
            small_cholesky_solve(d, factor, x);
            if (core::all_finite(x, d)) return core::SolveRoute::cholesky;
        }
    } else {
        std::copy(full, full + d * d, factor);
        if (blas::cholesky_factor(n, factor) == 0 &&
            regular_route_allowed<T>(
                d,
                [&] { return blas::cholesky_rcond(n, factor, norm, ws.condition_work.data(), ws.condition_iwork.data()); },
                [&] {
                    return exact_rcond(d, static_cast<double>(norm), ws.factor_inverse.data(),
                                       [&](T* v, blas::index_t columns) { blas::cholesky_solve(n, factor, v, columns); });
                })) {
            std::copy(b, b + d, x);
            blas::cholesky_solve(n, factor, x);
            if (core::all_finite(x, d)) return core::SolveRoute::cholesky;
        }
    }
    std::copy(full, full + d * d, factor);
    if (blas::lu_factor(n, factor, ws.pivots.data()) == 0 &&
        regular_route_allowed<T>(
            d, [&] { return blas::lu_rcond(n, factor, norm, ws.condition_work.data(), ws.condition_iwork.data()); },
            [&] {
                return exact_rcond(d, static_cast<double>(norm), ws.factor_inverse.data(),
                                   [&](T* v, blas::index_t columns) { blas::lu_solve(n, factor, ws.pivots.data(), v, columns); });
            })) {
        std::copy(b, b + d, x);
        blas::lu_solve(n, factor, ws.pivots.data(), x);
        if (core::all_finite(x, d)) return core::SolveRoute::lu;
    }
    std::copy(full, full + d * d, factor);
    return solve_minimum_norm(d, factor, b, x, smallest_rcond, ws);
}

template class SolveLadder<float>;
template class SolveLadder<double>;

}  // namespace rh::cpu

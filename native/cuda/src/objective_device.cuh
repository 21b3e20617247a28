// The d-sized pieces of an iteration as block-cooperative device functions
// (every thread of one block calls them): the surrogate's memory term, its
// gradient, the Newton (or majorizer) matrix and the Cholesky rung of a small
// system. The one-block kernels of objective.cu and the block solver
// (block_solver.cu, a whole update in one block) both call them.
#pragma once

#include <cstdint>

#include "block_barrier.cuh"
#include "core/solve_rule.hpp"
#include "core/solver_rules.hpp"
#include "launch.cuh"
#include "objective.cuh"

namespace rh::cuda {

// G (SYRK's upper triangle, column-major) at (i, j).
template <class T>
__device__ inline T gram_at(const T* G, std::int64_t d, std::int64_t i, std::int64_t j) {
    return i <= j ? G[i + j * d] : G[j + i * d];
}

// (J v)_i for the row-major information matrix, in double.
template <class T, class V>
__device__ inline double information_row(const SurrogateTerms<T>& terms, std::int64_t i, V&& v) {
    const T* row = terms.information + i * terms.d;
    double sum = 0.0;
    for (std::int64_t j = 0; j < terms.d; ++j) sum += static_cast<double>(row[j]) * v(j);
    return sum;
}

// The memory and history part of f at a point: 0.5 D' J D / N - c D' s,
// D = point - theta_prev (every thread of the block calls it).
template <class T>
__device__ inline double memory_value(const SurrogateTerms<T>& terms, const T* point) {
    auto D = [&](std::int64_t j) { return static_cast<double>(point[j] - terms.theta_prev[j]); };
    double quadratic = 0.0, linear = 0.0;
    for (std::int64_t i = threadIdx.x; i < terms.d; i += blockDim.x) {
        quadratic += D(i) * information_row(terms, i, D);
        if (terms.uses_history) linear += D(i) * static_cast<double>(terms.history[i]);
    }
    quadratic = block_sum(quadratic);
    linear = block_sum(linear);
    return 0.5 * quadratic / terms.weight_sum - terms.history_coefficient * linear;
}

// g = (J D - Z' s) / N - c hist, Z' s = (gx, sum s).
template <class T>
__device__ inline void gradient_into(const SurrogateTerms<T>& terms, const T* theta, const T* gx, const double* s_partials,
                              int blocks, T* g) {
    __shared__ double score_sum;
    if (threadIdx.x == 0) score_sum = sum_partials(s_partials, blocks, 1, 0);
    block_barrier();
    auto D = [&](std::int64_t j) { return static_cast<double>(theta[j] - terms.theta_prev[j]); };
    for (std::int64_t i = threadIdx.x; i < terms.d; i += blockDim.x) {
        const double product = i < terms.p ? static_cast<double>(gx[i]) : score_sum;
        double gi = (information_row(terms, i, D) - product) / terms.weight_sum;
        if (terms.uses_history) gi -= terms.history_coefficient * static_cast<double>(terms.history[i]);
        g[i] = static_cast<T>(gi);
    }
    block_barrier();
}

// H = (G + J)/N + ridge I (column-major, full), its symmetry and 1-norm into
// flags, and the step's verdict reset (every thread of the block calls it).
template <class T>
__device__ inline void assemble_system_matrix(const SurrogateTerms<T>& terms, const T* G, T* H, SystemFlags* flags) {
    const std::int64_t d = terms.d;
    const T inverse_n = static_cast<T>(1.0 / terms.weight_sum);
    for (std::int64_t e = threadIdx.x; e < d * d; e += blockDim.x) {
        const std::int64_t i = e % d, j = e / d;  // column-major
        T value = (gram_at(G, d, i, j) + terms.information[i * d + j]) * inverse_n;
        if (i == j) value += terms.ridge;
        H[e] = value;
    }
    block_barrier();
    __shared__ int asymmetric;
    if (threadIdx.x == 0) asymmetric = 0;
    block_barrier();
    double largest_column = 0.0;
    for (std::int64_t j = threadIdx.x; j < d; j += blockDim.x) {
        double column = 0.0;
        for (std::int64_t i = 0; i < d; ++i) {
            column += fabs(static_cast<double>(H[i + j * d]));
            if (i > j && H[i + j * d] != H[j + i * d]) asymmetric = 1;
        }
        largest_column = column > largest_column ? column : largest_column;
    }
    largest_column = block_max(largest_column);
    if (threadIdx.x == 0) {
        flags->symmetric = asymmetric == 0;
        flags->norm1 = largest_column;
        flags->step_ok = 0;
    }
}

// The Cholesky rung for d <= kSmallSystem in one block: H = L L' (right-
// looking: each column's pivot, the column below it, then the trailing
// update, every step's entries in parallel, so a step costs a few barriers
// instead of a thread's serial loop; an entry's subtractions come in the
// order a left-looking loop makes them), H^-1 = L'^-1 L^-1 by forward and
// back substitution on the identity (right-looking, all columns at once),
// its exact 1-norm for rcond, and step = H^-1 g when the rung accepts the
// system (H symmetric, positive pivots, rcond > eps d, finite step). flags:
// norm1 and symmetric as assemble_system_matrix set them; info, rcond,
// step_ok. `Largest`: the d its shared arrays hold.
template <class T, int Largest>
struct CholeskyShared {
    T L[Largest][Largest + 1];  // the factor, lower triangle (row, column)
    T inverse[Largest][Largest + 1];
    int failed;
};

// The rung with its arrays where the caller keeps them (`shared`: in the
// block's shared memory, static or dynamic).
template <class T, int Largest>
__device__ inline void small_cholesky_step_in(CholeskyShared<T, Largest>& shared, std::int64_t d, const T* H,
                                              const T* g, T* step, SystemFlags* flags) {
    auto& L = shared.L;
    auto& inverse = shared.inverse;
    int& failed = shared.failed;
    if (threadIdx.x == 0) failed = 0;
    for (std::int64_t e = threadIdx.x; e < d * d; e += blockDim.x) L[e % d][e / d] = H[e];  // column-major H
    block_barrier();
    for (std::int64_t k = 0; k < d; ++k) {
        if (threadIdx.x == 0) {
            const T pivot = L[k][k];
            if (!(pivot > T(0)) || !isfinite(pivot)) failed = 1;
            L[k][k] = sqrt(pivot > T(0) ? pivot : T(1));
        }
        block_barrier();
        for (std::int64_t i = k + 1 + threadIdx.x; i < d; i += blockDim.x) L[i][k] /= L[k][k];
        block_barrier();
        const std::int64_t rest = d - k - 1;
        for (std::int64_t e = threadIdx.x; e < rest * rest; e += blockDim.x) {
            const std::int64_t i = k + 1 + e / rest, j = k + 1 + e % rest;
            if (j <= i) L[i][j] -= L[i][k] * L[j][k];
        }
        block_barrier();
    }
    // Forward: L Y = I, row by row, the columns (and the rows below) in parallel.
    for (std::int64_t e = threadIdx.x; e < d * d; e += blockDim.x) inverse[e / d][e % d] = e / d == e % d ? T(1) : T(0);
    block_barrier();
    for (std::int64_t i = 0; i < d; ++i) {
        for (std::int64_t c = threadIdx.x; c < d; c += blockDim.x) inverse[i][c] /= L[i][i];
        block_barrier();
        const std::int64_t rest = d - i - 1;
        for (std::int64_t e = threadIdx.x; e < rest * d; e += blockDim.x) {
            const std::int64_t m = i + 1 + e / d, c = e % d;
            inverse[m][c] -= L[m][i] * inverse[i][c];
        }
        block_barrier();
    }
    // Back: L' X = Y, from the last row up.
    for (std::int64_t i = d - 1; i >= 0; --i) {
        for (std::int64_t c = threadIdx.x; c < d; c += blockDim.x) inverse[i][c] /= L[i][i];
        block_barrier();
        for (std::int64_t e = threadIdx.x; e < i * d; e += blockDim.x) {
            const std::int64_t m = e / d, c = e % d;
            inverse[m][c] -= L[i][m] * inverse[i][c];
        }
        block_barrier();
    }
    double largest_column = 0.0;
    for (std::int64_t c = threadIdx.x; c < d; c += blockDim.x) {
        double column = 0.0;
        for (std::int64_t i = 0; i < d; ++i) column += fabs(static_cast<double>(inverse[i][c]));
        largest_column = column > largest_column ? column : largest_column;
    }
    largest_column = block_max(largest_column);
    const double norm = flags->norm1;
    const double rcond = core::reciprocal_condition(norm, largest_column);
    const bool usable = failed == 0 && flags->symmetric != 0 && core::regular_solve_allowed<T>(rcond, d);
    double bad = 0.0;
    if (usable) {
        for (std::int64_t i = threadIdx.x; i < d; i += blockDim.x) {
            double sum = 0.0;
            for (std::int64_t j = 0; j < d; ++j) sum += static_cast<double>(inverse[i][j]) * static_cast<double>(g[j]);
            step[i] = static_cast<T>(sum);
            bad += isfinite(step[i]) ? 0.0 : 1.0;
        }
    }
    bad = block_sum(bad);
    if (threadIdx.x == 0) {
        flags->info = failed;
        flags->rcond = rcond;
        flags->step_ok = usable && bad == 0.0;
    }
}

// The rung with its arrays in static shared memory (d <= Largest).
template <class T, int Largest = kSmallSystem>
__device__ inline void small_cholesky_step(std::int64_t d, const T* H, const T* g, T* step, SystemFlags* flags) {
    __shared__ CholeskyShared<T, Largest> shared;
    small_cholesky_step_in(shared, d, H, g, step, flags);
}

}  // namespace rh::cuda

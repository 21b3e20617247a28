// The d-sized pieces of an iteration as device functions: block-cooperative
// ones (every thread of one block calls them) and the per-row and
// per-column pieces they are made of: the surrogate's memory term, its
// gradient, the Newton (or majorizer) matrix and the Cholesky rung of a
// small system. The multi-block kernels of objective.cu and the block
// solver (block_solver.cu, a whole update in one block) both call them.
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

// (J v)_i by one warp: lane l adds j = l, l + 32, ... in order, then the
// lanes in a fixed shuffle tree; every lane gets it. All 32 lanes call it.
// `Unroll` lets a lane's loads run ahead of its adds (the adds' order, and
// so the bits, are the same for every value): the multi-block kernels of
// objective.cu take kRowUnroll; the block solver leaves it to the compiler
// (0: its registers are spent).
template <class T, int Unroll = 0, class V>
__device__ inline double information_row_by_warp(const SurrogateTerms<T>& terms, std::int64_t i, V&& v) {
    const T* row = terms.information + i * terms.d;
    double sum = 0.0;
    strided_loop<Unroll>(static_cast<std::int64_t>(threadIdx.x & 31), terms.d, std::int64_t{32},
                         [&](std::int64_t j) { sum += static_cast<double>(row[j]) * v(j); });
    for (int shift = 16; shift > 0; shift >>= 1) sum += __shfl_down_sync(0xffffffffu, sum, shift);
    return __shfl_sync(0xffffffffu, sum, 0);
}

// K values held by each warp's lane 0, added over the block's warps in
// warp order by every thread (every thread gets the K sums): two block
// barriers. memory_value and step_memory sum through it, so their sums of
// the same terms have the same bits.
template <int K>
__device__ inline void add_in_warp_order(const double (&warp_values)[kWarps][K], double (&values)[K]) {
    for (int k = 0; k < K; ++k) {
        values[k] = 0.0;
        for (int w = 0; w < kWarps; ++w) values[k] += warp_values[w][k];
    }
}

template <int K>
__device__ inline void sum_over_warps(double (&values)[K]) {
    __shared__ double warp_values[kWarps][K];
    const int lane = static_cast<int>(threadIdx.x) & 31, warp = static_cast<int>(threadIdx.x) >> 5;
    if (lane == 0)
        for (int k = 0; k < K; ++k) warp_values[warp][k] = values[k];
    block_barrier();
    add_in_warp_order(warp_values, values);
    block_barrier();  // every thread has read warp_values before the next call writes them
}

// One row's terms of memory_value's two sums (quadratic, linear): Di (J D)_i
// and Di hist_i. The block's warps (memory_value) and a multi-block
// kernel's last block (objective.cu) add rows through it alike.
template <class T>
__device__ inline void add_memory_row(const SurrogateTerms<T>& terms, std::int64_t i, double Di, double row,
                                      double (&sums)[2]) {
    sums[0] += Di * row;
    if (terms.uses_history) sums[1] += Di * static_cast<double>(terms.history[i]);
}

// The memory and history part of f from memory_value's two sums:
// core::MemoryAlongStep::at(0) of these sums as the host evaluates it
// (step_memory's a and history0 are these, in this order; the host's line
// search compares its trials near t = 0 with this value): each operation
// rounded once in the host's order, no contraction into an FMA.
template <class T>
__device__ inline double memory_from_sums(const SurrogateTerms<T>& terms, double quadratic, double linear) {
    double value = __dmul_rn(__dmul_rn(0.5, quadratic), 1.0 / terms.weight_sum);
    if (terms.uses_history) value = __dsub_rn(value, __dmul_rn(terms.history_coefficient, linear));
    return value;
}

// The memory and history part of f at a point: 0.5 D' J D / N - c D' s,
// D = point - theta_prev (every thread of the block calls it; blocks of
// kThreads, as every kernel that calls it launches). A warp a
// row of J D (rows i = warp, warp + kWarps, ...), each warp's terms in
// its lane 0, then the warps' in warp order by every thread: two block
// barriers, where a thread a row walked the whole row (d dependent loads
// and adds) and two block sums took six.
template <class T>
__device__ inline double memory_value(const SurrogateTerms<T>& terms, const T* point) {
    auto D = [&](std::int64_t j) { return static_cast<double>(point[j] - terms.theta_prev[j]); };
    const int lane = static_cast<int>(threadIdx.x) & 31, warp = static_cast<int>(threadIdx.x) >> 5;
    double sums[2] = {};  // quadratic, linear
    for (std::int64_t i = warp; i < terms.d; i += kWarps) {
        const double row = information_row_by_warp(terms, i, D);
        if (lane == 0) add_memory_row(terms, i, D(i), row, sums);
    }
    sum_over_warps(sums);
    return memory_from_sums(terms, sums[0], sums[1]);
}

// g = (J D - Z' s) / N - c hist, Z' s = (gx, sum s): the intercept's total
// of s over the blocks' partials by the first warp, then a thread a row of
// J D (j in order). Not by warps as memory_value: the phase clocks of the
// seventeenth session (H100, 4,096 x 16 l1) had the warp-a-row gradient at
// 5.5k cycles a call against 3.9k a thread a row (for d of the block
// solver's size a shuffle tree a row, and the intercept row's grid sum
// serial in one warp, cost more than the walk). Its bits need no match with
// any other sum.
// Rows first, first + stride, ... of g (a thread a row, j in order), the
// intercept's total of s given. `Unroll`: as information_row_by_warp's.
template <class T, int Unroll = 0>
__device__ inline void gradient_rows(const SurrogateTerms<T>& terms, const T* theta, const T* gx, double score_sum,
                                     std::int64_t first, std::int64_t stride, T* g) {
    for (std::int64_t i = first; i < terms.d; i += stride) {
        const T* row = terms.information + i * terms.d;
        double jd = 0.0;
        strided_loop<Unroll>(std::int64_t{0}, terms.d, std::int64_t{1}, [&](std::int64_t j) {
            jd += static_cast<double>(row[j]) * static_cast<double>(theta[j] - terms.theta_prev[j]);
        });
        const double product = i < terms.p ? static_cast<double>(gx[i]) : score_sum;
        double gi = (jd - product) / terms.weight_sum;
        if (terms.uses_history) gi -= terms.history_coefficient * static_cast<double>(terms.history[i]);
        g[i] = static_cast<T>(gi);
    }
}

// The intercept's total of s over the scoring pass's `blocks` partials, by
// the block's first warp (every block has it); every thread gets it. A
// block barrier must come between two calls (gradient_into ends with one).
__device__ inline double block_score_sum(const double* s_partials, int blocks) {
    __shared__ double score_sum;
    if (threadIdx.x < 32) {
        const double sum = warp_sum_over_blocks(s_partials, 1, 0, blocks);
        if (threadIdx.x == 0) score_sum = sum;
    }
    block_barrier();
    return score_sum;
}

template <class T>
__device__ inline void gradient_into(const SurrogateTerms<T>& terms, const T* theta, const T* gx, const double* s_partials,
                              int blocks, T* g) {
    const double score_sum = block_score_sum(s_partials, blocks);
    gradient_rows(terms, theta, gx, score_sum, threadIdx.x, blockDim.x, g);
    block_barrier();
}

// H = (G + J)/N + ridge I (column-major, full), its symmetry and 1-norm into
// flags, and the step's verdict reset (every thread of the block calls it;
// blocks of whole warps). A warp takes columns j = warp, warp + kWarps, ...
// and its lanes the rows of each (32-bit indices: no 64-bit division per
// entry); each entry is compared with its mirror formed by the same
// expression (H exactly symmetric: the contract's test), and each column's
// |H| summed by the warp (lane-strided, then a fixed shuffle tree) for
// the 1-norm, where one thread a column walked the column before.
template <class T>
__device__ inline T system_entry(const SurrogateTerms<T>& terms, const T* G, int d, T inverse_n, int i, int j) {
    T value = (gram_at(G, d, i, j) + terms.information[static_cast<std::int64_t>(i) * d + j]) * inverse_n;
    if (i == j) value += terms.ridge;
    return value;
}

// Columns first_warp, first_warp + warps, ... of H, a warp a column (every
// lane of the calling warp calls it): the largest column |sum| into lane
// 0's *largest_column (NaN sums never taken), whether an entry differs from
// its mirror into *asymmetric (any lane may set it). `Unroll`: as
// information_row_by_warp's.
template <class T, int Unroll = 0>
__device__ inline void system_columns(const SurrogateTerms<T>& terms, const T* G, T* H, int first_warp, int warps,
                                      double* largest_column, int* asymmetric) {
    const int d = static_cast<int>(terms.d);
    const T inverse_n = static_cast<T>(1.0 / terms.weight_sum);
    const int lane = static_cast<int>(threadIdx.x) & 31;
    for (int j = first_warp; j < d; j += warps) {
        double column = 0.0;
        bool differs = false;
        strided_loop<Unroll>(lane, d, 32, [&](int i) {
            const T value = system_entry(terms, G, d, inverse_n, i, j);
            H[i + static_cast<std::int64_t>(j) * d] = value;
            column += fabs(static_cast<double>(value));
            differs = differs || (i > j && value != system_entry(terms, G, d, inverse_n, j, i));
        });
        for (int shift = 16; shift > 0; shift >>= 1) column += __shfl_down_sync(0xffffffffu, column, shift);
        if (lane == 0) *largest_column = column > *largest_column ? column : *largest_column;
        if (differs) *asymmetric = 1;
    }
}

// The verdicts of an assembled H into flags (the step's reset with them).
__device__ inline void write_system_flags(SystemFlags* flags, bool asymmetric, double largest_column) {
    flags->symmetric = !asymmetric;
    flags->norm1 = largest_column;
    flags->step_ok = 0;
}

// By a block of exactly `Warps` warps (the block solver's kWarps; the
// pipeline's one-block Newton step kRungThreads / 32); `Unroll`: system_columns'.
template <class T, int Warps = kWarps, int Unroll = 0>
__device__ inline void assemble_system_matrix(const SurrogateTerms<T>& terms, const T* G, T* H, SystemFlags* flags) {
    __shared__ int asymmetric;
    if (threadIdx.x == 0) asymmetric = 0;
    block_barrier();
    double largest_column = 0.0;
    system_columns<T, Unroll>(terms, G, H, static_cast<int>(threadIdx.x) >> 5, Warps, &largest_column, &asymmetric);
    largest_column = block_max<Warps>(largest_column);
    if (threadIdx.x == 0) write_system_flags(flags, asymmetric != 0, largest_column);
}

// The Cholesky rung for d <= kSmallSystem in one block. The rung needs
// H^-1 itself (its exact 1-norm for rcond), so it inverts H directly by
// Gauss-Jordan elimination without pivoting, which for a symmetric positive
// definite H meets the pivots a Cholesky factorization meets (pivot k is
// the Schur complement's diagonal, L_kk^2): the rung refuses H when one of
// them is not positive and finite, as the factorization would. Each
// elimination step reads one copy of the matrix and writes the other (two
// copies in shared memory, alternated), so a step is one block barrier: d
// barriers for the inverse, against about 7 d for a factorization and two
// substitutions (64 us a call at d = 33 on the H200, 2c3df36's profile).
// Then rcond from the exact 1-norms, and step = H^-1 g when the rung
// accepts the system (H symmetric, positive pivots, rcond > eps d, finite
// step). The elimination runs in double for either T: a float32 system's
// inverse then carries its data's rounding, not the elimination's too
// (the float32 rung in float put one golden case's coefficient 8.6e-4 from
// the oracle's, over its 5e-4). flags: norm1 and symmetric as
// assemble_system_matrix set them; info, rcond, step_ok. `Largest`: the d
// its shared arrays hold.
template <class T, int Largest>
struct CholeskyShared {
    double copies[2][Largest][Largest + 1];  // the matrix being inverted, read from one, written to the other
    int failed;
};

// The entries of a Largest x Largest matrix one thread of `Threads` updates
// in every step (row-major flat index threadIdx.x + o Threads): the rung
// needs blocks of exactly `Threads` threads (the block solver's kThreads;
// the ladder's kernel its own count, kRungThreads).
template <int Largest, int Threads>
inline constexpr int kEntriesPerThread = (Largest * Largest + Threads - 1) / Threads;

// The rung with its arrays where the caller keeps them (`shared`: in the
// block's shared memory, static or dynamic), by a block of `Threads`. The
// thread count changes only which thread forms an entry, never how: every
// entry, column sum and step value has the same bits at any count.
template <class T, int Largest, int Threads = kThreads>
__device__ inline void small_cholesky_step_in(CholeskyShared<T, Largest>& shared, std::int64_t d64, const T* H,
                                              const T* g, T* step, SystemFlags* flags) {
    const int d = static_cast<int>(d64);
    int& failed = shared.failed;
    // This thread's entries (row, column), fixed for every step.
    constexpr int kOwned = kEntriesPerThread<Largest, Threads>;
    int row[kOwned], column[kOwned];
#pragma unroll
    for (int o = 0; o < kOwned; ++o) {
        const int e = static_cast<int>(threadIdx.x) + o * Threads;
        row[o] = e < d * d ? e / d : -1;
        column[o] = e < d * d ? e - (e / d) * d : 0;
    }
    if (threadIdx.x == 0) failed = 0;
#pragma unroll
    for (int o = 0; o < kOwned; ++o)
        if (row[o] >= 0) shared.copies[0][row[o]][column[o]] = static_cast<double>(H[row[o] + column[o] * d]);  // column-major H
    block_barrier();
    // Step k: r = 1 / a_kk; a_kk <- r, a_kj <- a_kj r, a_ik <- -a_ik r, a_ij <- a_ij - a_ik (a_kj r).
    for (int k = 0; k < d; ++k) {
        auto& from = shared.copies[k & 1];
        auto& to = shared.copies[(k + 1) & 1];
        const double pivot = from[k][k];
        const bool usable_pivot = pivot > 0.0 && isfinite(pivot);
        if (threadIdx.x == 0 && !usable_pivot) failed = 1;
        const double r = 1.0 / (usable_pivot ? pivot : 1.0);
#pragma unroll
        for (int o = 0; o < kOwned; ++o) {
            const int i = row[o], j = column[o];
            if (i < 0) continue;
            // Every operand loaded and every candidate formed, then one
            // selected (no branch a case: the compiler's BSSY/BSYNC pairs
            // were most of an entry's instructions); the intrinsics are the
            // instructions nvcc chose for the branches' expressions (a DMUL,
            // the elimination contracted into one DFMA), so the same bits.
            const double a_kj = from[k][j], a_ik = from[i][k], a_ij = from[i][j];
            const double scaled = __dmul_rn(a_kj, r);  // the pivot row's new entry (every thread forms it alike)
            const double eliminated = __fma_rn(-scaled, a_ik, a_ij);  // a_ij - a_ik (a_kj r), one rounding
            const double pivot_column = -__dmul_rn(a_ik, r);
            to[i][j] = i == k ? (j == k ? r : scaled) : (j == k ? pivot_column : eliminated);
        }
        block_barrier();
    }
    const auto& inverse = shared.copies[d & 1];
    double largest_column = 0.0;
    for (int c = threadIdx.x; c < d; c += blockDim.x) {
        double column_sum = 0.0;
        for (int i = 0; i < d; ++i) column_sum += fabs(inverse[i][c]);
        largest_column = column_sum > largest_column ? column_sum : largest_column;
    }
    largest_column = block_max<Threads / 32>(largest_column);
    const double norm = flags->norm1;
    const double rcond = core::reciprocal_condition(norm, largest_column);
    const bool usable = failed == 0 && flags->symmetric != 0 && core::regular_solve_allowed<T>(rcond, d64);
    double bad = 0.0;
    if (usable) {
        for (int i = threadIdx.x; i < d; i += blockDim.x) {
            double sum = 0.0;
            for (int j = 0; j < d; ++j) sum += inverse[i][j] * static_cast<double>(g[j]);
            step[i] = static_cast<T>(sum);
            bad += isfinite(step[i]) ? 0.0 : 1.0;
        }
    }
    bad = block_sum<Threads / 32>(bad);
    if (threadIdx.x == 0) {
        flags->info = failed;
        flags->rcond = rcond;
        flags->step_ok = usable && bad == 0.0;
    }
}

// The rung with its arrays in static shared memory (d <= Largest), by a
// block of `Threads`.
template <class T, int Largest = kSmallSystem, int Threads = kThreads>
__device__ inline void small_cholesky_step(std::int64_t d, const T* H, const T* g, T* step, SystemFlags* flags) {
    __shared__ CholeskyShared<T, Largest> shared;
    small_cholesky_step_in<T, Largest, Threads>(shared, d, H, g, step, flags);
}

}  // namespace rh::cuda

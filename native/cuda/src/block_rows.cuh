// The block solver's work over a batch (block_solver.cu): the passes over
// the rows, every thread of the grid together (each block its rows or tiles,
// its partial sums, a grid barrier, then the partials added in block order
// by one warp each: the same bits in every block), and each block's d-sized
// work in its own slice of the work arrays (the gradient, the system and its
// Cholesky rung). `Widest`: the most parameters the kernel that uses it
// serves (its tiles and Cholesky arrays are sized for it).
#pragma once

#include <cooperative_groups.h>

#include <cstdint>

#include "block_barrier.cuh"
#include "block_solver.cuh"
#include "core/huber.hpp"
#include "launch.cuh"
#include "objective_device.cuh"
#include "phase_clocks.cuh"
#include "tensor_core_gram.cuh"

namespace rh::cuda {

// The rows' weights of a Gram a score pass forms: none, the row weights w,
// the curvature w kappa(r) (the Newton system, the batch's information), or
// w score(r)^2 (the meat, amendment 0003: meat_weights_kernel's formula).
enum class GramWeights { none, rows, curvature, meat };

// The pairs of the warps' sums a block adds per round (tensor_core_gram.cuh's
// add_over_warps): 6 x kWarps x 64 doubles, 24 KB of static shared memory
// (a Gram of d <= 24 and its Z' s in one round each).
inline constexpr int kBlockReducePairs = 6;

// The wide kernel's Cholesky arrays (block_solver.cu's block_dynamic_bytes).
extern __shared__ __align__(16) unsigned char block_dynamic_shared[];

// The passes over the batch's rows, every thread of the grid together, and
// this block's slices of the work arrays.
template <class T, int Widest>
struct BlockRows {
    const BlockProblem<T>& problem;
    int pass = 0;  // alternates the partial sums' two sets
    PhaseClocks clocks;  // profiling builds only (phase_clocks.cuh)

    __device__ std::int64_t entries() const { return problem.d * (problem.d + 1) / 2; }
    __device__ T* G() const { return problem.matrices + (3 * blockIdx.x) * problem.d * problem.d; }
    __device__ T* G_w() const { return G() + problem.d * problem.d; }
    __device__ T* H() const { return G_w() + problem.d * problem.d; }
    __device__ T* gradient() const { return problem.vectors + (3 * blockIdx.x) * problem.d; }
    __device__ T* step() const { return gradient() + problem.d; }
    __device__ T* gx() const { return step() + problem.d; }
    __device__ double* score_sum() const { return problem.score_sums + blockIdx.x; }
    __device__ SystemFlags* flags() const { return problem.flags + blockIdx.x; }

    // This pass's partial sums: per block, the loss, Z' s (d) and the Gram's entries.
    __device__ double* partials() {
        return problem.partials + (pass++ & 1) * static_cast<std::int64_t>(kBlockSolverGrid) * per_block();
    }
    __device__ std::int64_t per_block() const { return 1 + problem.d + entries(); }

    // f(i) for each row of this block's tiles (t = blockIdx.x, + gridDim.x,
    // ...: the tiles its Gram pass reads), a warp a tile and a lane a row,
    // the block's warps taking its tiles in turn. A small batch's rows are
    // spread over the whole grid (4,096 rows: a tile a block), where a
    // thread a row strided by the grid kept them in the first rows / 256
    // blocks, every warp of those walking 32 rows' uncoalesced X.
    template <class F>
    __device__ void for_each_row_of_tiles(F&& f) const {
        static_assert(kTileRows == 32, "a lane a row of a tile");
        const std::int64_t tiles = (problem.rows + kTileRows - 1) / kTileRows;
        const std::int64_t warps = blockDim.x >> 5;
        const std::int64_t lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
        for (std::int64_t t = blockIdx.x + warp * gridDim.x; t < tiles; t += warps * gridDim.x) {
            const std::int64_t i = t * kTileRows + lane;
            if (i < problem.rows) f(i);
        }
    }

    // The NaNs and infinities in X and in y, over the grid (the batch's value
    // check; in every thread).
    __device__ void count_non_finite(double& in_X, double& in_y) {
        const BlockProblem<T>& P = problem;
        double x = 0.0, y = 0.0;
        const std::int64_t stride = static_cast<std::int64_t>(gridDim.x) * blockDim.x;
        const std::int64_t first = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
        for (std::int64_t e = first; e < P.rows * P.p; e += stride) x += isfinite(P.X[e]) ? 0.0 : 1.0;
        for (std::int64_t i = first; i < P.rows; i += stride) y += isfinite(P.y[i]) ? 0.0 : 1.0;
        double* sums = partials();
        x = block_sum(x);
        y = block_sum(y);
        if (threadIdx.x == 0) {
            sums[blockIdx.x * per_block()] = x;
            sums[blockIdx.x * per_block() + 1] = y;
        }
        cooperative_groups::this_grid().sync();
        in_X = warp_sum_over_blocks(sums, per_block(), 0, gridDim.x);
        in_y = warp_sum_over_blocks(sums, per_block(), 1, gridDim.x);
    }

    // r_out = y - Z point; returns sum_i w_i loss(r_out_i) (block partials in block order).
    __device__ double residual(const T* point, T* r_out) {
        const BlockProblem<T>& P = problem;
        const T intercept = P.intercept ? point[P.p] : T(0);
        const T half_tau_squared = (T(0.5) * P.tau) * P.tau;
        double loss = 0.0;
        {
            const PhaseTimer timer(clocks, Phase::residual_rows);
            for_each_row_of_tiles([&](std::int64_t i) {
                const T* x = P.X + i * P.p;
                T fitted = T(0);
                for (std::int64_t j = 0; j < P.p; ++j) fitted = fma(x[j], point[j], fitted);
                const T ri = P.y[i] - (fitted + intercept);
                r_out[i] = ri;
                loss += static_cast<double>(P.w[i] * core::huber_loss_fast(ri, P.tau, half_tau_squared));
            });
        }
        const PhaseTimer timer(clocks, Phase::residual_sum);
        double* sums = partials();
        loss = block_sum(loss);
        if (threadIdx.x == 0) sums[blockIdx.x * per_block()] = loss;
        cooperative_groups::this_grid().sync();  // publishes r_out and the partials to the grid
        return warp_sum_over_blocks(sums, per_block(), 0, gridDim.x);  // every warp alike
    }

    // This block's partials of Z' s (mine[1 + j]) and, when `weights` is
    // not null, of the Gram (mine[1 + d + e]), on the tensor cores
    // (tensor_core_gram.cuh): warp w takes chunk w (rows 4 w .. 4 w + 3) of
    // each of the block's tiles (for_each_row_of_tiles' tiles of the whole
    // block, whose scores and weights the block barrier after score_rows
    // published), so a small batch's tile a block keeps all eight warps
    // busy; the next chunk's loads are issued before this chunk's MMAs; then
    // the warps' sums are added in warp order. nb = ceil(d / 8) column blocks.
    __device__ void score_pass_sums(const T* weights, double* mine) {
        __shared__ __align__(16) double slots[kBlockReducePairs][kWarps][64];  // one array for every nb
        const int nb = static_cast<int>((problem.d + kMmaSide - 1) / kMmaSide);
        static_assert(Widest % kMmaSide == 0 && Widest / kMmaSide <= 8, "the column blocks dispatched below");
        switch (nb) {
            case 1: score_pass_sums_of<1>(weights, mine, slots); break;
            case 2: score_pass_sums_of<2>(weights, mine, slots); break;
            case 3: score_pass_sums_of<3>(weights, mine, slots); break;
            case 4: score_pass_sums_of<4>(weights, mine, slots); break;
            default:
                if constexpr (Widest / kMmaSide > 4) {
                    switch (nb) {
                        case 5: score_pass_sums_of<5>(weights, mine, slots); break;
                        case 6: score_pass_sums_of<6>(weights, mine, slots); break;
                        case 7: score_pass_sums_of<7>(weights, mine, slots); break;
                        default: score_pass_sums_of<8>(weights, mine, slots); break;
                    }
                }
                break;
        }
    }

    template <int NB>
    __device__ __noinline__ void score_pass_sums_of(const T* weights, double* mine, double (*slots)[kWarps][64]) {
        static_assert(kTileRows == kMmaChunkRows * kWarps, "a tile is a chunk a warp");
        const BlockProblem<T>& P = problem;
        const int d = static_cast<int>(P.d);
        const int lane = static_cast<int>(threadIdx.x) & 31, warp = static_cast<int>(threadIdx.x) >> 5;
        const int column_in_block = lane >> 2, row_in_chunk = lane & 3;
        const std::int64_t tiles = (P.rows + kTileRows - 1) / kTileRows;
        const std::int64_t chunk_row = static_cast<std::int64_t>(warp) * kMmaChunkRows + row_in_chunk;
        MmaGramSums<NB> gram;
        MmaScoreSums<NB> scores;
        MmaChunk<T, NB> next;
        T next_score = T(0);
        auto load = [&](std::int64_t t) {
            const std::int64_t i = t * kTileRows + chunk_row;
            next.load(P.rows, P.p, P.intercept, P.X, weights, i, column_in_block);
            next_score = i < P.rows ? P.s[i] : T(0);
        };
        if (blockIdx.x < tiles) load(blockIdx.x);
        for (std::int64_t t = blockIdx.x; t < tiles; t += gridDim.x) {  // the same trip count on a warp's lanes
            const MmaChunk<T, NB> chunk = next;
            const T score = next_score;
            if (t + gridDim.x < tiles) load(t + gridDim.x);
            if (weights != nullptr) gram.add(chunk);
            scores.add(chunk, score, lane);
        }
        add_scores_over_warps<NB, kBlockReducePairs>(scores, d, slots,
                                                     [&](int j, double total) { mine[1 + j] = total; });
        if (weights != nullptr)
            add_gram_over_warps<NB, kBlockReducePairs>(gram, d, slots,
                                                       [&](std::int64_t e, double total) { mine[1 + d + e] = total; });
    }

    // From the residual r: s = w score(r), and the rows' weights of the Gram
    // (`kind`: c = w kappa(r), c = w score(r)^2, the row weights w, or no
    // Gram), for this block's tiles; then Z' s into gx and score_sum and the
    // Gram into G_out (this block's slice), added over the grid.
    __device__ void score(const T* r, GramWeights kind, T* G_out) {
        const BlockProblem<T>& P = problem;
        const T inverse_two_h = T(1) / (T(2) * P.h);
        {
            const PhaseTimer timer(clocks, Phase::score_rows);
            for_each_row_of_tiles([&](std::int64_t i) {
                const T ri = r[i], wi = P.w[i], si = core::huber_score(ri, P.tau);
                P.s[i] = wi * si;
                if (kind == GramWeights::curvature)
                    P.c[i] = wi * core::smoothed_curvature_fast(ri, P.tau, P.h, inverse_two_h);
                else if (kind == GramWeights::meat)
                    P.c[i] = wi * (si * si);
            });
            block_barrier();  // this block's tiles' s and c, read by this block only
        }
        const T* weights = kind == GramWeights::curvature || kind == GramWeights::meat
                               ? P.c
                               : (kind == GramWeights::rows ? P.w : nullptr);
        const int d = static_cast<int>(P.d);
        double* sums = partials();
        double* mine = sums + blockIdx.x * per_block();
        {
            const PhaseTimer timer(clocks, Phase::gram_tiles);
            score_pass_sums(weights, mine);
        }
        const PhaseTimer timer(clocks, Phase::gram_sum);
        auto grid = cooperative_groups::this_grid();
        grid.sync();
        if (weights == nullptr) {
            // Z' s alone (LAMM's gradient): d totals, which each block forms
            // itself, its warps taking totals k, k + kWarps, ... (the same
            // warp_sum_over_blocks, so the bits every warp of the grid would
            // give), with no second grid barrier. The partials' two sets
            // alternate, and the next pass's grid barrier comes before this
            // set is written again.
            const int lane = static_cast<int>(threadIdx.x) & 31;
            for (int k = static_cast<int>(threadIdx.x) >> 5; k < d; k += static_cast<int>(blockDim.x) >> 5) {
                const double total = warp_sum_over_blocks(sums, per_block(), 1 + k, gridDim.x);
                if (lane == 0) {
                    if (k < P.p) gx()[k] = static_cast<T>(total);
                    else *score_sum() = total;
                }
            }
            if (!P.intercept && threadIdx.x == 0) *score_sum() = 0.0;
            block_barrier();
            return;
        }
        // With the Gram: the totals each by one warp of the grid
        // (warp_sum_over_blocks), then read by every block.
        const int count = d + static_cast<int>(entries());
        const int warp = static_cast<int>(blockIdx.x) * kWarps + static_cast<int>(threadIdx.x >> 5);
        for (int k = warp; k < count; k += static_cast<int>(gridDim.x) * kWarps) {
            const double total = warp_sum_over_blocks(sums, per_block(), 1 + k, gridDim.x);
            if ((threadIdx.x & 31) == 0) P.totals[k] = total;
        }
        grid.sync();
        for (int j = threadIdx.x; j < d; j += blockDim.x) {
            if (j < P.p) gx()[j] = static_cast<T>(P.totals[j]);
            else *score_sum() = P.totals[j];
        }
        if (!P.intercept && threadIdx.x == 0) *score_sum() = 0.0;
        for (int e = threadIdx.x; e < static_cast<int>(entries()); e += blockDim.x) {
            int a, c;
            entry_pair(e, d, a, c);
            G_out[a + static_cast<std::int64_t>(c) * d] = static_cast<T>(P.totals[d + e]);
        }
        block_barrier();
    }

    // The Newton (or majorizer) system from the Gram G and the gradient, and
    // the Cholesky rung's step into step() (its verdict in flags()).
    __device__ void solve_system(const T* G) {
        {
            const PhaseTimer timer(clocks, Phase::system);
            assemble_system_matrix(problem.terms, G, H(), flags());
            block_barrier();
        }
        const PhaseTimer timer(clocks, Phase::cholesky);
        if constexpr (Widest <= kBlockSolverParameters) {
            small_cholesky_step<T, Widest>(problem.d, H(), gradient(), step(), flags());
        } else {  // past the static shared memory's 48 KB: the launch's dynamic shared memory
            small_cholesky_step_in(*reinterpret_cast<CholeskyShared<T, Widest>*>(block_dynamic_shared), problem.d, H(),
                                   gradient(), step(), flags());
        }
        block_barrier();
    }

    // F = loss / N + the memory part, at a point whose residual was just formed.
    __device__ double objective(double data, const T* point) {
        const PhaseTimer timer(clocks, Phase::memory);
        return data / problem.terms.weight_sum + memory_value(problem.terms, point);
    }

    // grad f at `point` from the scores of the current residual (Z' s formed).
    __device__ void gradient_at(const T* point) {
        const PhaseTimer timer(clocks, Phase::gradient);
        gradient_into(problem.terms, point, gx(), score_sum(), 1, gradient());
    }
};

}  // namespace rh::cuda

#include "gram_kernels.cuh"

#include "core/huber.hpp"
#include "engine_internal.cuh"
#include "launch.cuh"
#include "tensor_core_gram.cuh"

namespace rh::cuda {

namespace {

// Two blocks per multiprocessor of an H100/H200 (132 of them). A fixed
// grid: the sums do not depend on the device.
constexpr int kGramBlocks = 2 * 132;

// The pairs of the warps' accumulators the block adds per round of its
// reduction (shared memory: kReducePairs x kWarps x 64 doubles, 24 KB).
constexpr int kReducePairs = 6;

// The Gram on the tensor cores (tensor_core_gram.cuh), nb = ceil(d / 8)
// column blocks: warp w of the grid takes the chunks of 4 rows w, w + W, ...
// (W warps in all), the next chunk's loads issued before this chunk's MMAs.
// Then the block adds its warps' sums in warp order, a few pairs a round,
// and writes the upper-triangle entries a <= b < d into its partials (the
// entry_pair order; narrow_gram_sum_kernel adds the blocks'). d >= 1 (an
// engine has a parameter at least); c is not null (every caller passes
// weights).
template <class T, int NB>
__global__ void __launch_bounds__(kThreads) narrow_gram_kernel(std::int64_t n, std::int64_t p, bool intercept,
                                                               const T* X, const T* c, double* partials) {
    __shared__ __align__(16) double slots[kReducePairs][kWarps][64];
    const int lane = static_cast<int>(threadIdx.x) & 31, warp = static_cast<int>(threadIdx.x) >> 5;
    const int column_in_block = lane >> 2, row_in_chunk = lane & 3;
    const std::int64_t chunks = (n + kMmaChunkRows - 1) / kMmaChunkRows;
    const std::int64_t first = static_cast<std::int64_t>(blockIdx.x) * kWarps + warp;
    const std::int64_t stride = static_cast<std::int64_t>(gridDim.x) * kWarps;
    MmaGramSums<NB> sums;
    MmaChunk<T, NB> next;
    if (first < chunks)
        next.load(n, p, intercept, X, c, first * kMmaChunkRows + row_in_chunk, column_in_block);
    for (std::int64_t q = first; q < chunks; q += stride) {  // the same trip count on a warp's lanes
        const MmaChunk<T, NB> chunk = next;
        if (q + stride < chunks)
            next.load(n, p, intercept, X, c, (q + stride) * kMmaChunkRows + row_in_chunk, column_in_block);
        sums.add(chunk);
    }
    const int d = static_cast<int>(p + (intercept ? 1 : 0));
    double* mine = partials + static_cast<std::int64_t>(blockIdx.x) * (static_cast<std::int64_t>(d) * (d + 1) / 2);
    add_gram_over_warps<NB, kReducePairs>(sums, d, slots, [&](std::int64_t e, double total) { mine[e] = total; });
}

template <class T, int NB>
void launch_gram_blocks(cudaStream_t stream, std::int64_t n, std::int64_t p, bool intercept, const T* X, const T* c,
                        double* partials) {
    narrow_gram_kernel<T, NB><<<kGramBlocks, kThreads, 0, stream>>>(n, p, intercept, X, c, partials);
}

// The Newton direction's pass (launch_narrow_score_gram): the chunks of
// narrow_gram_kernel, each lane of a row forming that row's residual move,
// s and c itself (the eight lanes of a row alike; lanes 0-3 write the
// moved residual back), the Gram's MMAs with c as the weights and one more
// MMA per column block for Z' s (MmaScoreSums). The block's partials: the
// Gram's entries, then Z' s (d values). Up to 5 column blocks (d <= 40:
// the streaming class's 33) it keeps two blocks a multiprocessor, as
// narrow_gram_kernel does (128 registers, 8 bytes of stack in float64,
// where it would take 156); past that, one and no spills.
template <class T, int NB>
struct ScoredChunk {
    MmaChunk<T, NB> rows;
    T r, w, move;  // move: dz (t > 0) or the trial's residual (trial >= 0)
};

template <class T, int NB>
__global__ void __launch_bounds__(kThreads, NB <= 5 ? 2 : 1) narrow_score_gram_kernel(std::int64_t n, std::int64_t p, bool intercept,
                                                                     const T* X, ResidualAdvance<T> advance,
                                                                     const T* w, T tau, T h, T* r, double* partials,
                                                                     const BatchConstants<T>* constants) {
    __shared__ __align__(16) double slots[kReducePairs][kWarps][64];
    read_row_inputs(constants, X, w, tau);
    read_bandwidth(constants, h);
    const double t = advance.t != nullptr ? *advance.t : 0.0;
    const int trial = advance.trial != nullptr ? *advance.trial : -1;
    const T scaled = static_cast<T>(t);
    const T inverse_two_h = T(1) / (T(2) * h);
    const T* moves = t > 0.0 ? advance.dz
                             : (trial >= 0 ? advance.trial_residuals + static_cast<std::int64_t>(trial) * n : nullptr);
    const int lane = static_cast<int>(threadIdx.x) & 31, warp = static_cast<int>(threadIdx.x) >> 5;
    const int column_in_block = lane >> 2, row_in_chunk = lane & 3;
    const std::int64_t chunks = (n + kMmaChunkRows - 1) / kMmaChunkRows;
    const std::int64_t first = static_cast<std::int64_t>(blockIdx.x) * kWarps + warp;
    const std::int64_t stride = static_cast<std::int64_t>(gridDim.x) * kWarps;
    MmaGramSums<NB> gram;
    MmaScoreSums<NB> scores;
    ScoredChunk<T, NB> next;
    auto load = [&](std::int64_t q) {
        const std::int64_t i = q * kMmaChunkRows + row_in_chunk;
        next.rows.load(n, p, intercept, X, nullptr, i, column_in_block);
        const bool in = i < n;
        next.r = in ? r[i] : T(0);
        next.w = in ? w[i] : T(0);
        next.move = in && moves != nullptr ? moves[i] : T(0);
    };
    if (first < chunks) load(first);
    for (std::int64_t q = first; q < chunks; q += stride) {  // the same trip count on a warp's lanes
        ScoredChunk<T, NB> chunk = next;
        if (q + stride < chunks) load(q + stride);
        // score_rows_kernel's arithmetic, row for row (the same bits of r, s and c).
        T ri = chunk.r;
        if (t > 0.0)
            ri = fma(scaled, chunk.move, ri);
        else if (trial >= 0)
            ri = chunk.move;
        const std::int64_t i = q * kMmaChunkRows + row_in_chunk;
        __syncwarp();  // every lane's load of this chunk's r (issued a step ago) before lanes 0-3 write it
        if (moves != nullptr && column_in_block == 0 && i < n) r[i] = ri;
        const T si = chunk.w * core::huber_score(ri, tau);
        chunk.rows.weight = chunk.w * core::smoothed_curvature_fast(ri, tau, h, inverse_two_h);  // c (0 past n: w is)
        gram.add(chunk.rows);
        scores.add(chunk.rows, si, lane);
    }
    const int d = static_cast<int>(p + (intercept ? 1 : 0));
    const std::int64_t entries = static_cast<std::int64_t>(d) * (d + 1) / 2;
    double* mine = partials + static_cast<std::int64_t>(blockIdx.x) * (entries + d);
    add_gram_over_warps<NB, kReducePairs>(gram, d, slots, [&](std::int64_t e, double total) { mine[e] = total; });
    add_scores_over_warps<NB, kReducePairs>(scores, d, slots,
                                            [&](int j, double total) { mine[entries + j] = total; });
}

template <class T, int NB>
void launch_score_gram_blocks(cudaStream_t stream, std::int64_t n, std::int64_t p, bool intercept, const T* X,
                              const ResidualAdvance<T>& advance, const T* w, T tau, T h, T* r, double* partials,
                              const BatchConstants<T>* constants) {
    narrow_score_gram_kernel<T, NB><<<kGramBlocks, kThreads, 0, stream>>>(n, p, intercept, X, advance, w, tau, h, r,
                                                                          partials, constants);
}

// Each entry's total by one warp over the blocks' partials
// (warp_sum_over_blocks: lane l adds blocks l, l + 32, ..., then a fixed
// shuffle tree), the entries spread over as many blocks as they need: a
// chain of blocks / 32 adds an entry, not one of blocks adds a thread.
constexpr int kSumThreads = 64;
constexpr int kSumEntries = kSumThreads / 32;  // entries a block, one a warp

template <class T>
__global__ void __launch_bounds__(kSumThreads) narrow_gram_sum_kernel(int d, int blocks, const double* partials, T* G) {
    const int entries = d * (d + 1) / 2;
    const int e = static_cast<int>(blockIdx.x) * kSumEntries + static_cast<int>(threadIdx.x) / 32;
    if (e >= entries) return;  // a whole warp: e is the same on its lanes
    const double sum = warp_sum_over_blocks(partials, entries, e, blocks);
    if ((threadIdx.x & 31) != 0) return;
    int a, bb;
    entry_pair(e, d, a, bb);
    G[a + static_cast<std::int64_t>(bb) * d] = static_cast<T>(sum);  // column-major upper triangle
}

// The same over the fused pass's partials (a block's Gram entries, then
// its Z' s): G, then X' s into gx and the intercept's sum into *score_sum
// (zero without an intercept: d == p).
template <class T>
__global__ void __launch_bounds__(kSumThreads) narrow_score_gram_sum_kernel(int d, int p, int blocks,
                                                                            const double* partials, T* G, T* gx,
                                                                            double* score_sum) {
    const int entries = d * (d + 1) / 2;
    const int e = static_cast<int>(blockIdx.x) * kSumEntries + static_cast<int>(threadIdx.x) / 32;
    if (e == 0 && threadIdx.x == 0 && d == p) *score_sum = 0.0;
    if (e >= entries + d) return;  // a whole warp: e is the same on its lanes
    const double sum = warp_sum_over_blocks(partials, entries + d, e, blocks);
    if ((threadIdx.x & 31) != 0) return;
    if (e < entries) {
        int a, bb;
        entry_pair(e, d, a, bb);
        G[a + static_cast<std::int64_t>(bb) * d] = static_cast<T>(sum);
    } else if (e - entries < p) {
        gx[e - entries] = static_cast<T>(sum);
    } else {
        *score_sum = sum;  // the intercept's column: the sum of s
    }
}

}  // namespace

std::int64_t narrow_gram_partials(std::int64_t d) { return static_cast<std::int64_t>(kGramBlocks) * (d * (d + 1) / 2 + d); }

template <class T>
void launch_narrow_gram(cudaStream_t stream, std::int64_t n, std::int64_t p, bool intercept, const T* X, const T* c,
                        double* partials, T* G) {
    const int d = static_cast<int>(p + (intercept ? 1 : 0));
    static_assert(kNarrowGram <= 8 * kMmaSide, "the column blocks the launch below dispatches");
    switch ((d + kMmaSide - 1) / kMmaSide) {
        case 1: launch_gram_blocks<T, 1>(stream, n, p, intercept, X, c, partials); break;
        case 2: launch_gram_blocks<T, 2>(stream, n, p, intercept, X, c, partials); break;
        case 3: launch_gram_blocks<T, 3>(stream, n, p, intercept, X, c, partials); break;
        case 4: launch_gram_blocks<T, 4>(stream, n, p, intercept, X, c, partials); break;
        case 5: launch_gram_blocks<T, 5>(stream, n, p, intercept, X, c, partials); break;
        case 6: launch_gram_blocks<T, 6>(stream, n, p, intercept, X, c, partials); break;
        case 7: launch_gram_blocks<T, 7>(stream, n, p, intercept, X, c, partials); break;
        default: launch_gram_blocks<T, 8>(stream, n, p, intercept, X, c, partials); break;
    }
    RH_CUDA_LAUNCHED();
    const int entries = d * (d + 1) / 2;
    narrow_gram_sum_kernel<T><<<(entries + kSumEntries - 1) / kSumEntries, kSumThreads, 0, stream>>>(
        d, kGramBlocks, partials, G);
    RH_CUDA_LAUNCHED();
}

template <class T>
void launch_narrow_score_gram(cudaStream_t stream, std::int64_t n, std::int64_t p, bool intercept, const T* X,
                              const ResidualAdvance<T>& advance, const T* w, T tau, T h, T* r, double* partials, T* G,
                              T* gx, double* score_sum, const BatchConstants<T>* constants) {
    const int d = static_cast<int>(p + (intercept ? 1 : 0));
    switch ((d + kMmaSide - 1) / kMmaSide) {
        case 1: launch_score_gram_blocks<T, 1>(stream, n, p, intercept, X, advance, w, tau, h, r, partials, constants); break;
        case 2: launch_score_gram_blocks<T, 2>(stream, n, p, intercept, X, advance, w, tau, h, r, partials, constants); break;
        case 3: launch_score_gram_blocks<T, 3>(stream, n, p, intercept, X, advance, w, tau, h, r, partials, constants); break;
        case 4: launch_score_gram_blocks<T, 4>(stream, n, p, intercept, X, advance, w, tau, h, r, partials, constants); break;
        case 5: launch_score_gram_blocks<T, 5>(stream, n, p, intercept, X, advance, w, tau, h, r, partials, constants); break;
        case 6: launch_score_gram_blocks<T, 6>(stream, n, p, intercept, X, advance, w, tau, h, r, partials, constants); break;
        case 7: launch_score_gram_blocks<T, 7>(stream, n, p, intercept, X, advance, w, tau, h, r, partials, constants); break;
        default: launch_score_gram_blocks<T, 8>(stream, n, p, intercept, X, advance, w, tau, h, r, partials, constants); break;
    }
    RH_CUDA_LAUNCHED();
    const int totals = d * (d + 1) / 2 + d;
    narrow_score_gram_sum_kernel<T><<<(totals + kSumEntries - 1) / kSumEntries, kSumThreads, 0, stream>>>(
        d, static_cast<int>(p), kGramBlocks, partials, G, gx, score_sum);
    RH_CUDA_LAUNCHED();
}

template void launch_narrow_gram<float>(cudaStream_t, std::int64_t, std::int64_t, bool, const float*, const float*,
                                        double*, float*);
template void launch_narrow_gram<double>(cudaStream_t, std::int64_t, std::int64_t, bool, const double*,
                                         const double*, double*, double*);

template void launch_narrow_score_gram<float>(cudaStream_t, std::int64_t, std::int64_t, bool, const float*,
                                              const ResidualAdvance<float>&, const float*, float, float, float*,
                                              double*, float*, float*, double*, const BatchConstants<float>*);
template void launch_narrow_score_gram<double>(cudaStream_t, std::int64_t, std::int64_t, bool, const double*,
                                               const ResidualAdvance<double>&, const double*, double, double, double*,
                                               double*, double*, double*, double*, const BatchConstants<double>*);

}  // namespace rh::cuda

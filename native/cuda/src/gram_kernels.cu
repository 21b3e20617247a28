#include "gram_kernels.cuh"

#include "engine_internal.cuh"
#include "gram_tiles.cuh"
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

}  // namespace

std::int64_t narrow_gram_partials(std::int64_t d) { return static_cast<std::int64_t>(kGramBlocks) * d * (d + 1) / 2; }

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

template void launch_narrow_gram<float>(cudaStream_t, std::int64_t, std::int64_t, bool, const float*, const float*,
                                        double*, float*);
template void launch_narrow_gram<double>(cudaStream_t, std::int64_t, std::int64_t, bool, const double*,
                                         const double*, double*, double*);

}  // namespace rh::cuda

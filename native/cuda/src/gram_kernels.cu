#include "gram_kernels.cuh"

#include "engine_internal.cuh"
#include "gram_tiles.cuh"
#include "launch.cuh"

namespace rh::cuda {

namespace {

// Two blocks per multiprocessor of an H100/H200 (132 of them): the kernel's
// 98 registers a thread allow two 256-thread blocks on one, and with one
// Nsight Compute found 12% of warps active and 6 cycles between a warp's
// instructions (docs/profiles/h100-2e7b6f3-pending/kernel_detail_streaming.csv).
// A fixed grid: the sums do not depend on the device.
constexpr int kGramBlocks = 2 * 132;

// The Gram by 4 x 4 blocks of entries a thread (the columns padded to a
// multiple of 4: nb = ceil(d / 4) blocks a side, nb (nb + 1) / 2 block
// pairs I <= J): per row, 4 weighted values of block I and 4 values of
// block J from the staged tile give 16 products, 8 shared loads for 16
// multiply-adds where an entry a thread took 2 loads for one. The block's
// threads beyond one per pair form more groups, each over its own rows of
// every tile (rows g, g + groups, ...); the groups' sums are added in
// group order at the end. In the tile, column 4 J + v is kept at
// v nb + J, so the lanes of a warp (consecutive J) read consecutive words.
// The products are the same as the entry-a-thread pass's ((c_i z_ia) in T,
// times z_ib, in double), their order not: the sums are fixed by the grid
// and the group count, not by scheduling. d >= 1 (an engine has a
// parameter at least); c is not null (every caller passes weights).
constexpr int kBlock = 4;                                   // a thread's block of entries is kBlock x kBlock
constexpr int kMaxSide = (static_cast<int>(kNarrowGram) + kBlock - 1) / kBlock;  // nb at d = kNarrowGram
constexpr int kReduceBytes = kThreads * kBlock * kBlock * static_cast<int>(sizeof(double));

template <class T>
struct BlockedGramShared {
    static constexpr int kStride = kMaxSide * kBlock + 1;
    T tile[kTileRows][kStride];
    T weight[kTileRows];
};

template <class T>
__global__ void __launch_bounds__(kThreads) narrow_gram_kernel(std::int64_t n, std::int64_t p, bool intercept,
                                                               const T* X, const T* c, double* partials) {
    static_assert(sizeof(BlockedGramShared<T>) <= kReduceBytes, "the tile lives in the reduction's buffer");
    __shared__ __align__(16) unsigned char buffer[kReduceBytes];
    auto& staged = *reinterpret_cast<BlockedGramShared<T>*>(buffer);
    const int d = static_cast<int>(p + (intercept ? 1 : 0));
    const int nb = (d + kBlock - 1) / kBlock, pairs = nb * (nb + 1) / 2;
    const int groups = kThreads / pairs;  // >= 1: pairs <= kMaxSide (kMaxSide + 1) / 2 = 136
    const int q = static_cast<int>(threadIdx.x) % pairs, g = static_cast<int>(threadIdx.x) / pairs;
    const bool computes = g < groups;
    int I = 0, J = 0;
    entry_pair(q, nb, I, J);
    double sums[kBlock][kBlock] = {};
    const std::int64_t tiles = (n + kTileRows - 1) / kTileRows;
    // This thread's share of the next tile's rows and weights, in registers (gram_tiles.cuh).
    using Fetch = TileFetch<T, kMaxSide * kBlock>;
    Fetch next;
    if (blockIdx.x < tiles) next.fetch(n, p, d, X, c, nullptr, static_cast<std::int64_t>(blockIdx.x) * kTileRows);
    // The padded columns d .. 4 nb - 1 stay zero in every tile.
    for (int e = threadIdx.x; e < kTileRows * (nb * kBlock - d); e += kThreads) {
        const int k = e / (nb * kBlock - d), column = d + e % (nb * kBlock - d);
        staged.tile[k][(column % kBlock) * nb + column / kBlock] = T(0);
    }
    for (std::int64_t t = blockIdx.x; t < tiles; t += gridDim.x) {
        block_barrier();  // the last tile's products are done
        Fetch::each_element(d, [&](int l, int k, int column) {
            staged.tile[k][(column % kBlock) * nb + column / kBlock] = next.values[l];
        });
        if (threadIdx.x < kTileRows) staged.weight[threadIdx.x] = next.weight;
        block_barrier();
        if (t + gridDim.x < tiles) next.fetch(n, p, d, X, c, nullptr, (t + gridDim.x) * kTileRows);
        if (computes) {
            for (int k = g; k < kTileRows; k += groups) {
                const T w = staged.weight[k];
                double weighted[kBlock], plain[kBlock];
#pragma unroll
                for (int u = 0; u < kBlock; ++u) {
                    weighted[u] = static_cast<double>(w * staged.tile[k][u * nb + I]);
                    plain[u] = static_cast<double>(staged.tile[k][u * nb + J]);
                }
#pragma unroll
                for (int u = 0; u < kBlock; ++u)
#pragma unroll
                    for (int v = 0; v < kBlock; ++v) sums[u][v] += weighted[u] * plain[v];
            }
        }
    }
    // The groups' sums, added in group order, for the entries a <= b < d.
    block_barrier();  // the tile's memory becomes the reduction's
    auto* reduced = reinterpret_cast<double*>(buffer);  // [slot][thread]: a warp's stores in consecutive words
#pragma unroll
    for (int u = 0; u < kBlock; ++u)
#pragma unroll
        for (int v = 0; v < kBlock; ++v) reduced[(u * kBlock + v) * kThreads + threadIdx.x] = sums[u][v];
    block_barrier();
    const int entries = d * (d + 1) / 2;
    for (int e = threadIdx.x; e < entries; e += kThreads) {
        int a, b;
        entry_pair(e, d, a, b);
        const int A = a / kBlock, B = b / kBlock;
        const int pair = A * nb - A * (A - 1) / 2 + (B - A);  // entry_pair's order over the blocks
        const int slot = (a % kBlock) * kBlock + b % kBlock;
        double total = 0.0;
        for (int group = 0; group < groups; ++group) total += reduced[slot * kThreads + group * pairs + pair];
        partials[static_cast<std::int64_t>(blockIdx.x) * entries + e] = total;
    }
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
    narrow_gram_kernel<T><<<kGramBlocks, kThreads, 0, stream>>>(n, p, intercept, X, c, partials);
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

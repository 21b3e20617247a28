// Launch geometry and the deterministic reductions every kernel of the
// engine shares: row kernels run a fixed grid (it depends on the row count
// only) with grid-stride loops, each block writes its partial sums, and
// one thread (in block order) or one warp (in a fixed lane-strided order
// and shuffle tree) adds the blocks' partials. No atomics in a sum: a
// result never depends on scheduling.
#pragma once

#include <cstdint>

#include "block_barrier.cuh"

namespace rh::cuda {

inline constexpr int kThreads = 256;     // threads per block, every kernel (gradient_kernel: one warp)
inline constexpr int kMaxBlocks = 1024;  // blocks of a row kernel at most
inline constexpr int kWarps = kThreads / 32;
// The loads a lane (or a thread) issues ahead of its adds in the
// multi-block d-sized kernels (objective.cu, ladder_kernels.cu): unrolled
// loops keep the adds' order, so the bits are those of a rolled loop.
inline constexpr int kRowUnroll = 4;   // a warp's row of J v: a lane's loads 32 apart
inline constexpr int kWalkUnroll = 8;  // a thread's walk of a row or a column

#if defined(__CUDACC__)
// for (i = first; i < end; i += step) body(i), unrolled Unroll times, or
// as the compiler chooses when Unroll is 0 (the block solver's loops).
template <int Unroll, class I, class Body>
__device__ __forceinline__ void strided_loop(I first, I end, I step, Body&& body) {
    if constexpr (Unroll > 0) {
#pragma unroll(Unroll)
        for (I i = first; i < end; i += step) body(i);
    } else {
        for (I i = first; i < end; i += step) body(i);
    }
}
#endif

inline int row_blocks(std::int64_t work) {
    const std::int64_t blocks = (work + kThreads - 1) / kThreads;
    return static_cast<int>(blocks < 1 ? 1 : (blocks > kMaxBlocks ? kMaxBlocks : blocks));
}

#if defined(__CUDACC__)
// The K per-thread values summed over the block (warp shuffles in a fixed
// order, then the warps in order) into partials[blockIdx.x * K + k]. Every
// thread of the block must call it.
template <int K>
__device__ inline void store_block_sums(const double (&values)[K], double* partials) {
    __shared__ double warp_sums[kWarps][K];
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
#pragma unroll
    for (int k = 0; k < K; ++k) {
        double x = values[k];
        for (int offset = 16; offset > 0; offset >>= 1) x += __shfl_down_sync(0xffffffffu, x, offset);
        if (lane == 0) warp_sums[warp][k] = x;
    }
    block_barrier();
    for (int k = threadIdx.x; k < K; k += blockDim.x) {
        double sum = 0.0;
        for (int w = 0; w < kWarps; ++w) sum += warp_sums[w][k];
        partials[blockIdx.x * K + k] = sum;
    }
}

// The sum over `blocks` blocks of value `offset` of each block's partials
// (`stride` apart), by one warp: lane l adds blocks l, l + 32, ... in
// order, then the lanes in a fixed shuffle tree. Every warp that calls it
// gets the same bits; every lane gets the sum. All 32 lanes must call it.
// (32 chains of blocks / 32 adds: a pass's sums over hundreds of blocks
// cost a chain of hundreds of dependent adds by one thread, 28 us for
// 1,024 on the H200.)
__device__ inline double warp_sum_over_blocks(const double* sums, std::int64_t stride, std::int64_t offset,
                                              int blocks) {
    double value = 0.0;
    for (int b = threadIdx.x & 31; b < blocks; b += 32) value += sums[b * stride + offset];
    for (int shift = 16; shift > 0; shift >>= 1) value += __shfl_down_sync(0xffffffffu, value, shift);
    return __shfl_sync(0xffffffffu, value, 0);
}

// The sum over a block's threads of one value each, in a fixed order (for
// the single-block kernels); every thread gets the result. `Warps`: the
// block's warps (blocks of kThreads unless the kernel says otherwise).
template <int Warps = kWarps>
__device__ inline double block_sum(double value) {
    __shared__ double warp_sums[Warps];
    __shared__ double total;
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    for (int offset = 16; offset > 0; offset >>= 1) value += __shfl_down_sync(0xffffffffu, value, offset);
    if (lane == 0) warp_sums[warp] = value;
    block_barrier();
    if (threadIdx.x == 0) {
        double sum = 0.0;
        for (int w = 0; w < Warps; ++w) sum += warp_sums[w];
        total = sum;
    }
    block_barrier();
    const double result = total;
    block_barrier();
    return result;
}

// The maximum over a block's threads (every thread gets it; `Warps` as in block_sum).
template <int Warps = kWarps>
__device__ inline double block_max(double value) {
    __shared__ double warp_max[Warps];
    __shared__ double total;
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    for (int offset = 16; offset > 0; offset >>= 1) {
        const double other = __shfl_down_sync(0xffffffffu, value, offset);
        value = other > value ? other : value;
    }
    if (lane == 0) warp_max[warp] = value;
    block_barrier();
    if (threadIdx.x == 0) {
        double m = warp_max[0];
        for (int w = 1; w < Warps; ++w) m = warp_max[w] > m ? warp_max[w] : m;
        total = m;
    }
    block_barrier();
    const double result = total;
    block_barrier();
    return result;
}
#endif

}  // namespace rh::cuda

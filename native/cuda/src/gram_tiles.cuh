// The tile pass of the narrow Gram, as a device function: a block stages
// tiles of kTileRows rows of Z = [X, 1] (and their row weights c, and
// optionally the scores s) in shared memory and accumulates, in double, the
// upper-triangle entries of Z' diag(c) Z it owns (a few a thread) and, in
// the threads j < d, (Z' s)_j. The narrow Gram kernel runs it over a fixed
// grid's share of the tiles (gram_kernels.cu); the block solver over all of
// them in one block (block_solver.cu).
#pragma once

#include <cstdint>

#include "block_barrier.cuh"
#include "gram_kernels.cuh"
#include "launch.cuh"

namespace rh::cuda {

inline constexpr int kTileRows = 32;
inline constexpr int kMaxEntriesPerThread = (kNarrowGram + 1) * (kNarrowGram + 2) / 2 / kThreads + 1;

// Upper-triangle entry e (row-major order of the pairs a <= b) as (a, b).
__device__ inline void entry_pair(int e, int d, int& a, int& b) {
    a = 0;
    int row_length = d;
    while (e >= row_length) {
        e -= row_length;
        ++a;
        --row_length;
    }
    b = a + e;
}

// The entries of the upper triangle a thread owns (e = threadIdx.x +
// k blockDim.x) and their running sums.
struct GramEntries {
    int a[kMaxEntriesPerThread], b[kMaxEntriesPerThread];
    double sums[kMaxEntriesPerThread];
    int owned = 0;

    __device__ explicit GramEntries(int d) {
        const int entries = d * (d + 1) / 2;
        for (int e = threadIdx.x; e < entries; e += blockDim.x, ++owned) {
            entry_pair(e, d, a[owned], b[owned]);
            sums[owned] = 0.0;
        }
    }
};

// Tiles first_tile, first_tile + tile_stride, ... of the n rows: the Gram
// entries with the row weights c (none when c is null) into `entries`, and
// (Z' s)_j into score_product for threads j < d when s is not null. Every
// thread of the block calls it. `Widest`: the d its tile holds.
template <class T, int Widest = kNarrowGram>
__device__ inline void accumulate_gram_tiles(std::int64_t n, std::int64_t p, bool intercept, const T* X, const T* c,
                                             const T* s, std::int64_t first_tile, std::int64_t tile_stride,
                                             GramEntries& entries, double& score_product) {
    const int d = static_cast<int>(p + (intercept ? 1 : 0));
    __shared__ T tile[kTileRows][Widest + 1];
    __shared__ T weight[kTileRows];
    __shared__ T score[kTileRows];
    const std::int64_t tiles = (n + kTileRows - 1) / kTileRows;
    for (std::int64_t t = first_tile; t < tiles; t += tile_stride) {
        const std::int64_t first = t * kTileRows;
        block_barrier();
        for (int e = threadIdx.x; e < kTileRows * d; e += blockDim.x) {
            const int k = e / d, j = e - k * d;
            const std::int64_t i = first + k;
            tile[k][j] = i < n ? (j < p ? X[i * p + j] : T(1)) : T(0);
        }
        for (int k = threadIdx.x; k < kTileRows; k += blockDim.x) {
            if (c != nullptr) weight[k] = first + k < n ? c[first + k] : T(0);
            if (s != nullptr) score[k] = first + k < n ? s[first + k] : T(0);
        }
        block_barrier();
        if (c != nullptr) {
            for (int o = 0; o < entries.owned; ++o) {
                const int a = entries.a[o], b = entries.b[o];
                double sum = 0.0;
                for (int k = 0; k < kTileRows; ++k)
                    sum += static_cast<double>(weight[k] * tile[k][a]) * static_cast<double>(tile[k][b]);
                entries.sums[o] += sum;
            }
        }
        if (s != nullptr && threadIdx.x < d) {
            double sum = 0.0;
            for (int k = 0; k < kTileRows; ++k)
                sum += static_cast<double>(score[k]) * static_cast<double>(tile[k][threadIdx.x]);
            score_product += sum;
        }
    }
}

}  // namespace rh::cuda

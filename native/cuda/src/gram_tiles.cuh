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

// One tile's values a thread stages (kThreads threads a block): fetched
// from global memory into registers while the block still computes on the
// tile before, then stored into shared memory, so a tile's load latency
// hides behind the last tile's arithmetic instead of stalling the block.
template <class T, int Widest>
struct TileFetch {
    static constexpr int kLoads = (kTileRows * Widest + kThreads - 1) / kThreads;
    T values[kLoads];
    T weight, score;

    // f(l, k, j) for each of this thread's elements l of a tile of d
    // columns: row k, column j (element e = threadIdx.x + l kThreads, row-major).
    template <class F>
    __device__ static void each_element(int d, F&& f) {
        const int elements = kTileRows * d;
#pragma unroll
        for (int l = 0; l < kLoads; ++l) {
            const int e = static_cast<int>(threadIdx.x) + l * kThreads;
            if (e < elements) {
                const int k = e / d;
                f(l, k, e - k * d);
            }
        }
    }

    __device__ void fetch(std::int64_t n, std::int64_t p, int d, const T* X, const T* c, const T* s,
                          std::int64_t first) {
        each_element(d, [&](int l, int k, int j) {
            const std::int64_t i = first + k;
            values[l] = i < n ? (j < p ? X[i * p + j] : T(1)) : T(0);
        });
        if (threadIdx.x < kTileRows) {
            const std::int64_t i = first + threadIdx.x;
            if (c != nullptr) weight = i < n ? c[i] : T(0);
            if (s != nullptr) score = i < n ? s[i] : T(0);
        }
    }

    __device__ void store(int d, bool weighted, bool scored, T (*tile)[Widest + 1], T* weights, T* scores) const {
        each_element(d, [&](int l, int k, int j) { tile[k][j] = values[l]; });
        if (threadIdx.x < kTileRows) {
            if (weighted) weights[threadIdx.x] = weight;
            if (scored) scores[threadIdx.x] = score;
        }
    }
};

// Tiles first_tile, first_tile + tile_stride, ... of the n rows: the Gram
// entries with the row weights c (none when c is null) into `entries`, and
// (Z' s)_j into score_product for threads j < d when s is not null. Every
// thread of the block calls it, and the block has kThreads threads (both
// callers launch that many). The next tile is fetched into registers before
// this one's products (TileFetch); each entry's sum runs over the tiles and
// their rows in the same order as before, so the bits do not depend on it.
// The first tile is read before any barrier here: a caller that wrote c or
// s in the same kernel must have passed a block (or grid) barrier since.
// `Widest`: the d its tile holds.
template <class T, int Widest = kNarrowGram>
__device__ inline void accumulate_gram_tiles(std::int64_t n, std::int64_t p, bool intercept, const T* X, const T* c,
                                             const T* s, std::int64_t first_tile, std::int64_t tile_stride,
                                             GramEntries& entries, double& score_product) {
    const int d = static_cast<int>(p + (intercept ? 1 : 0));
    __shared__ T tile[kTileRows][Widest + 1];
    __shared__ T weight[kTileRows];
    __shared__ T score[kTileRows];
    const std::int64_t tiles = (n + kTileRows - 1) / kTileRows;
    TileFetch<T, Widest> next;
    if (first_tile < tiles) next.fetch(n, p, d, X, c, s, first_tile * kTileRows);
    for (std::int64_t t = first_tile; t < tiles; t += tile_stride) {
        block_barrier();  // the last tile's products are done with the shared arrays
        next.store(d, c != nullptr, s != nullptr, tile, weight, score);
        block_barrier();
        if (t + tile_stride < tiles) next.fetch(n, p, d, X, c, s, (t + tile_stride) * kTileRows);
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

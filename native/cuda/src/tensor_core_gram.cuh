// The weighted Gram Z' diag(c) Z on the FP64 tensor cores (sm_80 and later:
// mma.sync m8n8k4 with double operands), a warp at a time: the columns of
// Z = [X, 1] in blocks of 8 (nb = ceil(d / 8) of them, the last padded with
// zeros), and for each chunk of 4 rows one MMA per block pair I <= J,
// D_IJ += A_I B_J with A_I = (c z)' (8 x 4: the chunk's weighted columns of
// block I) and B_J = z (4 x 8: its columns of block J).
//
// The operands come straight from global memory, without a staged tile: in
// the MMA's fragment layout lane l holds A[l / 4][l % 4] and B[l % 4][l / 4],
// which are both row (l % 4) of the chunk, columns 8 I + l / 4 and
// 8 J + l / 4. So lane l reads its row's columns l / 4, 8 + l / 4, ... (a
// warp reads 4 rows x 8 columns a block: whole 32-byte sectors) and forms
// A_I = double(c z) (the product in T, as the scalar kernels form it) and
// B_J = double(z). The accumulator of pair (I, J) holds, in lane l, D's row
// l / 4 and columns 2 (l % 4) and 2 (l % 4) + 1.
//
// Each entry's sum runs over the warp's chunks in chunk order, each chunk's
// four products added by the MMA: a fixed order, so the bits do not depend
// on scheduling (they differ from a scalar loop's).
#pragma once

#include <cstdint>

#include "block_barrier.cuh"
#include "launch.cuh"

namespace rh::cuda {

inline constexpr int kMmaSide = 8;       // an MMA's block of entries is 8 x 8
inline constexpr int kMmaChunkRows = 4;  // rows of Z an MMA reads (its k)

__host__ __device__ constexpr int mma_pairs(int nb) { return nb * (nb + 1) / 2; }

// D += A B for one 8 x 8 x 4 block, in double (lane layout above).
__device__ __forceinline__ void dmma_8x8x4(double& d0, double& d1, double a, double b) {
    asm volatile("mma.sync.aligned.m8n8k4.row.col.f64.f64.f64.f64 {%0, %1}, {%2}, {%3}, {%0, %1};"
                 : "+d"(d0), "+d"(d1)
                 : "d"(a), "d"(b));
}

// A lane's values of one chunk: its row's weight and its columns
// 8 I + lane / 4 of Z (zero past d and past the last row).
template <class T, int NB>
struct MmaChunk {
    T z[NB];
    T weight;

    // c may be null (then the weight is zero and not read).
    __device__ void load(std::int64_t n, std::int64_t p, bool intercept, const T* X, const T* c, std::int64_t row,
                         int column_in_block) {
        const bool in = row < n;
        weight = in && c != nullptr ? c[row] : T(0);
#pragma unroll
        for (int I = 0; I < NB; ++I) {
            const std::int64_t column = I * kMmaSide + column_in_block;
            z[I] = !in ? T(0) : (column < p ? X[row * p + column] : (intercept && column == p ? T(1) : T(0)));
        }
    }
};

// The accumulators of one warp: pair q = (I, J), I <= J, in the order
// (0, 0), (0, 1), ..., (0, nb - 1), (1, 1), ...: two doubles a lane each.
template <int NB>
struct MmaGramSums {
    double d[mma_pairs(NB)][2] = {};

    template <class T>
    __device__ void add(const MmaChunk<T, NB>& chunk) {
        double a[NB], b[NB];
#pragma unroll
        for (int I = 0; I < NB; ++I) {
            a[I] = static_cast<double>(chunk.weight * chunk.z[I]);
            b[I] = static_cast<double>(chunk.z[I]);
        }
        int q = 0;
#pragma unroll
        for (int I = 0; I < NB; ++I)
#pragma unroll
            for (int J = I; J < NB; ++J, ++q) dmma_8x8x4(d[q][0], d[q][1], a[I], b[J]);
    }
};

// Z' s of a warp's chunks on the tensor cores too: per column block I,
// D_I += A_I B with A_I = z' (the chunk's unweighted columns of block I,
// the values a lane holds as B_I above) and B = s in column 0 (lanes 0-3
// hold the chunk's four scores, the others zero). Entry 8 I + m of Z' s is
// value 0 of lane 4 m in D_I.
template <int NB>
struct MmaScoreSums {
    double d[NB][2] = {};

    template <class T>
    __device__ void add(const MmaChunk<T, NB>& chunk, T score, int lane) {
        const double b = (lane >> 2) == 0 ? static_cast<double>(score) : 0.0;
#pragma unroll
        for (int I = 0; I < NB; ++I) dmma_8x8x4(d[I][0], d[I][1], static_cast<double>(chunk.z[I]), b);
    }
};

// The entry (a, b) that value v (0 or 1) of lane l holds in pair (I, J).
__device__ inline void mma_entry(int I, int J, int lane, int v, int& a, int& b) {
    a = I * kMmaSide + (lane >> 2);
    b = J * kMmaSide + 2 * (lane & 3) + v;
}

// The block's warps' accumulators added in warp order, Rounds pairs at a
// time through `slots` (Rounds x kWarps x 64 doubles of shared memory):
// for each pair q, lane l and value v (0, 1), put(q, l, v, total) may call
// total() for the sum over the warps. Every thread of the block calls it
// (blocks of kThreads threads); it begins with a block barrier (the last
// use of `slots` is done), and the caller needs one before writing `slots`
// again.
template <int K, int Rounds, class Put>
__device__ inline void add_over_warps(const double (&acc)[K][2], double (*slots)[kWarps][64], Put&& put) {
    const int lane = static_cast<int>(threadIdx.x) & 31, warp = static_cast<int>(threadIdx.x) >> 5;
#pragma unroll
    for (int round = 0; round < (K + Rounds - 1) / Rounds; ++round) {
        block_barrier();
#pragma unroll
        for (int k = 0; k < Rounds; ++k) {
            if (round * Rounds + k < K) {
                const double* pair = acc[round * Rounds + k];
                reinterpret_cast<double2*>(slots[k][warp])[lane] = make_double2(pair[0], pair[1]);
            }
        }
        block_barrier();
        for (int t = threadIdx.x; t < Rounds * 64; t += kThreads) {
            const int k = t / 64, value = t % 64, q = round * Rounds + k;
            if (q >= K) continue;
            put(q, value / 2, value % 2, [&] {
                double total = 0.0;
                for (int w = 0; w < kWarps; ++w) total += slots[k][w][value];
                return total;
            });
        }
    }
}

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

// Upper-triangle entry (a, b), a <= b < d, in entry_pair's order.
__device__ inline std::int64_t upper_entry(int a, int b, int d) {
    return static_cast<std::int64_t>(a) * d - static_cast<std::int64_t>(a) * (a - 1) / 2 + (b - a);
}

// A block's Gram entries (a <= b < d) from its warps' sums: put_entry(e, total).
template <int NB, int Rounds, class PutEntry>
__device__ inline void add_gram_over_warps(const MmaGramSums<NB>& sums, int d, double (*slots)[kWarps][64],
                                           PutEntry&& put_entry) {
    add_over_warps<mma_pairs(NB), Rounds>(sums.d, slots, [&](int q, int lane, int v, auto&& total) {
        int I, J, a, b;
        entry_pair(q, NB, I, J);  // the pairs I <= J in the same row-major order as the entries
        mma_entry(I, J, lane, v, a, b);
        if (a <= b && b < d) put_entry(upper_entry(a, b, d), total());  // not below a diagonal block's diagonal, nor padding
    });
}

// A block's Z' s entries (j < d) from its warps' sums: put_column(j, total).
template <int NB, int Rounds, class PutColumn>
__device__ inline void add_scores_over_warps(const MmaScoreSums<NB>& sums, int d, double (*slots)[kWarps][64],
                                             PutColumn&& put_column) {
    add_over_warps<NB, Rounds>(sums.d, slots, [&](int I, int lane, int v, auto&& total) {
        const int j = I * kMmaSide + (lane >> 2);
        if ((lane & 3) == 0 && v == 0 && j < d) put_column(j, total());
    });
}

}  // namespace rh::cuda

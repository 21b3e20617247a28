#include "gram_kernels.cuh"

#include "engine_internal.cuh"
#include "launch.cuh"

namespace rh::cuda {

namespace {

constexpr int kTileRows = 32;
constexpr int kGramBlocks = 132;  // one per multiprocessor of an H100/H200; a fixed grid: fixed sums
constexpr int kMaxEntriesPerThread = (kNarrowGram + 1) * (kNarrowGram + 2) / 2 / kThreads + 1;

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

template <class T>
__global__ void narrow_gram_kernel(std::int64_t n, std::int64_t p, bool intercept, const T* X, const T* c,
                                   double* partials) {
    const int d = static_cast<int>(p + (intercept ? 1 : 0));
    const int entries = d * (d + 1) / 2;
    __shared__ T tile[kTileRows][kNarrowGram + 1];
    int pair_a[kMaxEntriesPerThread], pair_b[kMaxEntriesPerThread];
    double sums[kMaxEntriesPerThread];
    int owned = 0;
    for (int e = threadIdx.x; e < entries; e += blockDim.x, ++owned) {
        entry_pair(e, d, pair_a[owned], pair_b[owned]);
        sums[owned] = 0.0;
    }
    const std::int64_t tiles = (n + kTileRows - 1) / kTileRows;
    for (std::int64_t t = blockIdx.x; t < tiles; t += gridDim.x) {
        const std::int64_t first = t * kTileRows;
        __syncthreads();
        // stage sqrt(c_i)-free rows: z_i scaled by c_i on one side below
        for (int e = threadIdx.x; e < kTileRows * d; e += blockDim.x) {
            const int k = e / d, j = e - k * d;
            const std::int64_t i = first + k;
            tile[k][j] = i < n ? (j < p ? X[i * p + j] : T(1)) : T(0);
        }
        __shared__ T weight[kTileRows];
        for (int k = threadIdx.x; k < kTileRows; k += blockDim.x) weight[k] = first + k < n ? c[first + k] : T(0);
        __syncthreads();
        for (int o = 0; o < owned; ++o) {
            const int a = pair_a[o], b = pair_b[o];
            double sum = 0.0;
            for (int k = 0; k < kTileRows; ++k)
                sum += static_cast<double>(weight[k] * tile[k][a]) * static_cast<double>(tile[k][b]);
            sums[o] += sum;
        }
    }
    for (int o = 0, e = threadIdx.x; o < owned; ++o, e += blockDim.x)
        partials[static_cast<std::int64_t>(blockIdx.x) * entries + e] = sums[o];
}

template <class T>
__global__ void narrow_gram_sum_kernel(int d, int blocks, const double* partials, T* G) {
    const int entries = d * (d + 1) / 2;
    for (int e = threadIdx.x; e < entries; e += blockDim.x) {
        double sum = 0.0;
        for (int b = 0; b < blocks; ++b) sum += partials[static_cast<std::int64_t>(b) * entries + e];
        int a, bb;
        entry_pair(e, d, a, bb);
        G[a + static_cast<std::int64_t>(bb) * d] = static_cast<T>(sum);  // column-major upper triangle
    }
}

}  // namespace

std::int64_t narrow_gram_partials(std::int64_t d) { return static_cast<std::int64_t>(kGramBlocks) * d * (d + 1) / 2; }

template <class T>
void launch_narrow_gram(cudaStream_t stream, std::int64_t n, std::int64_t p, bool intercept, const T* X, const T* c,
                        double* partials, T* G) {
    const int d = static_cast<int>(p + (intercept ? 1 : 0));
    narrow_gram_kernel<T><<<kGramBlocks, kThreads, 0, stream>>>(n, p, intercept, X, c, partials);
    RH_CUDA_LAUNCHED();
    narrow_gram_sum_kernel<T><<<1, kThreads, 0, stream>>>(d, kGramBlocks, partials, G);
    RH_CUDA_LAUNCHED();
}

template void launch_narrow_gram<float>(cudaStream_t, std::int64_t, std::int64_t, bool, const float*, const float*,
                                        double*, float*);
template void launch_narrow_gram<double>(cudaStream_t, std::int64_t, std::int64_t, bool, const double*,
                                         const double*, double*, double*);

}  // namespace rh::cuda

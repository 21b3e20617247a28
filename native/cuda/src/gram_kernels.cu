#include "gram_kernels.cuh"

#include "engine_internal.cuh"
#include "gram_tiles.cuh"
#include "launch.cuh"

namespace rh::cuda {

namespace {

constexpr int kGramBlocks = 132;  // one per multiprocessor of an H100/H200; a fixed grid: fixed sums

template <class T>
__global__ void narrow_gram_kernel(std::int64_t n, std::int64_t p, bool intercept, const T* X, const T* c,
                                   double* partials) {
    const int d = static_cast<int>(p + (intercept ? 1 : 0));
    const int entries = d * (d + 1) / 2;
    GramEntries owned(d);
    double unused = 0.0;
    accumulate_gram_tiles<T>(n, p, intercept, X, c, nullptr, blockIdx.x, gridDim.x, owned, unused);
    for (int o = 0, e = threadIdx.x; o < owned.owned; ++o, e += blockDim.x)
        partials[static_cast<std::int64_t>(blockIdx.x) * entries + e] = owned.sums[o];
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

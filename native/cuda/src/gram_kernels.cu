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

// Each entry's total by one thread, adding the blocks' partials in block
// order (sum_partials: the same sums as one block would make), the entries
// spread over as many blocks as they need, so the kernel costs about one
// chain of adds, not one per entry a single block's thread would take in
// turn.
constexpr int kSumThreads = 64;

template <class T>
__global__ void __launch_bounds__(kSumThreads) narrow_gram_sum_kernel(int d, int blocks, const double* partials, T* G) {
    const int entries = d * (d + 1) / 2;
    const int e = static_cast<int>(blockIdx.x) * kSumThreads + static_cast<int>(threadIdx.x);
    if (e >= entries) return;
    const double sum = sum_partials(partials, blocks, entries, e);
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
    narrow_gram_sum_kernel<T><<<(entries + kSumThreads - 1) / kSumThreads, kSumThreads, 0, stream>>>(
        d, kGramBlocks, partials, G);
    RH_CUDA_LAUNCHED();
}

template void launch_narrow_gram<float>(cudaStream_t, std::int64_t, std::int64_t, bool, const float*, const float*,
                                        double*, float*);
template void launch_narrow_gram<double>(cudaStream_t, std::int64_t, std::int64_t, bool, const double*,
                                         const double*, double*, double*);

}  // namespace rh::cuda

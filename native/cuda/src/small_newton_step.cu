#include "small_newton_step.cuh"

#include "batch_constants.cuh"
#include "engine_internal.cuh"
#include "ladder_kernels.cuh"
#include "launch.cuh"
#include "objective_device.cuh"

namespace rh::cuda {

namespace {

// g by a thread a row and H by a warp a column (newton_system_kernel's
// functions and unrolling, so the same bits with one block as with its
// grid), written to global memory; then the rung reads them back after the
// barrier (the block's own writes: L1 or L2, about 9 KB at d = 48).
template <class T>
__global__ void __launch_bounds__(kRungThreads)
    small_newton_step_kernel(SurrogateTerms<T> terms, const T* theta, const T* gx, const double* s_partials,
                             int blocks, const T* G, T* g, T* H, T* step, SystemFlags* flags,
                             const SurrogateTerms<T>* terms_on_device) {
    read_terms(terms_on_device, terms);
    const double score_sum = block_score_sum(s_partials, blocks);
    gradient_rows<T, kWalkUnroll>(terms, theta, gx, score_sum, threadIdx.x, blockDim.x, g);
    assemble_system_matrix<T, kRungThreads / 32, kWalkUnroll>(terms, G, H, flags);
    block_barrier();  // g, H and the flags written by their threads before any thread reads them
    small_cholesky_step<T, kSmallSystem, kRungThreads>(terms.d, H, g, step, flags);
}

}  // namespace

template <class T>
void launch_small_newton_step(cudaStream_t stream, const SurrogateTerms<T>& terms, const T* theta, const T* gx,
                              const double* s_partials, int blocks, const T* G, T* g, T* H, T* step,
                              SystemFlags* flags, const SurrogateTerms<T>* terms_on_device) {
    small_newton_step_kernel<T><<<1, kRungThreads, 0, stream>>>(terms, theta, gx, s_partials, blocks, G, g, H, step,
                                                               flags, terms_on_device);
    RH_CUDA_LAUNCHED();
}

template void launch_small_newton_step<float>(cudaStream_t, const SurrogateTerms<float>&, const float*, const float*,
                                              const double*, int, const float*, float*, float*, float*, SystemFlags*,
                                              const SurrogateTerms<float>*);
template void launch_small_newton_step<double>(cudaStream_t, const SurrogateTerms<double>&, const double*,
                                               const double*, const double*, int, const double*, double*, double*,
                                               double*, SystemFlags*, const SurrogateTerms<double>*);

}  // namespace rh::cuda

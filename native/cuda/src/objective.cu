#include "objective.cuh"

#include "core/memory_along_step.hpp"
#include "engine_internal.cuh"
#include "huber_kernels.cuh"
#include "launch.cuh"
#include "objective_device.cuh"

namespace rh::cuda {

static_assert(kPassPoints >= kLineSearchSteps && kPassPoints >= kDoublingSteps && kPassPoints >= kLammTrialsPerPass,
              "a pass record holds every trial point of a pass");

namespace {

template <class T>
__global__ void newton_system_kernel(SurrogateTerms<T> terms, const T* theta, const T* gx, const double* s_partials,
                                     int blocks, const T* G, T* g, T* H, SystemFlags* flags) {
    gradient_into(terms, theta, gx, s_partials, blocks, g);
    assemble_system_matrix(terms, G, H, flags);
}

template <class T>
__global__ void majorizer_matrix_kernel(SurrogateTerms<T> terms, const T* G, T* H, SystemFlags* flags) {
    assemble_system_matrix(terms, G, H, flags);
}

template <class T>
__global__ void gradient_kernel(SurrogateTerms<T> terms, const T* theta, const T* gx, const double* s_partials,
                                int blocks, T* g) {
    gradient_into(terms, theta, gx, s_partials, blocks, g);
}

// The memory and history part of f along theta - t step
// (core::MemoryAlongStep), its sums by block reductions. Every thread of
// the block calls it; every thread gets the sums.
template <class T>
__device__ core::MemoryAlongStep step_memory(const SurrogateTerms<T>& terms, const T* theta, const T* step) {
    auto D0 = [&](std::int64_t j) { return static_cast<double>(theta[j] - terms.theta_prev[j]); };
    auto S = [&](std::int64_t j) { return static_cast<double>(step[j]); };
    core::MemoryAlongStep m;
    for (std::int64_t i = threadIdx.x; i < terms.d; i += blockDim.x) {
        const double jd0 = information_row(terms, i, D0), jstep = information_row(terms, i, S);
        m.a += D0(i) * jd0;
        m.b1 += S(i) * jd0;
        m.b2 += D0(i) * jstep;
        m.c += S(i) * jstep;
        if (terms.uses_history) {
            m.history0 += D0(i) * static_cast<double>(terms.history[i]);
            m.history1 += S(i) * static_cast<double>(terms.history[i]);
        }
    }
    m.a = block_sum(m.a);
    m.b1 = block_sum(m.b1);
    m.b2 = block_sum(m.b2);
    m.c = block_sum(m.c);
    m.history0 = block_sum(m.history0);
    m.history1 = block_sum(m.history1);
    m.inverse_n = 1.0 / terms.weight_sum;
    m.history_coefficient = terms.history_coefficient;
    m.uses_history = terms.uses_history;
    return m;
}

// theta - t step rounded in T, each operation rounded once (no contraction
// into an FMA): the bits core::SearchSteps::form gives on the host.
__device__ inline float moved(float theta, float t, float step) { return __fsub_rn(theta, __fmul_rn(t, step)); }
__device__ inline double moved(double theta, double t, double step) { return __dsub_rn(theta, __dmul_rn(t, step)); }

template <class T>
__global__ void search_memory_kernel(SurrogateTerms<T> terms, const T* theta, const T* step, double first,
                                     int exponent_step, T* points, PassRecord* record) {
    const int k = blockIdx.x;
    const T scaled = static_cast<T>(ldexp(first, k * exponent_step));
    T* point = points + static_cast<std::int64_t>(k) * terms.d;
    for (std::int64_t j = threadIdx.x; j < terms.d; j += blockDim.x) point[j] = moved(theta[j], scaled, step[j]);
    __syncthreads();
    const double memory = memory_value(terms, point);
    if (threadIdx.x == 0) record->memory[k] = memory;
    if (k != 0) return;
    const core::MemoryAlongStep along = step_memory(terms, theta, step);
    if (threadIdx.x == 0) record->along = along;
}

template <class T>
__global__ void point_memory_kernel(SurrogateTerms<T> terms, const T* points, PassRecord* record) {
    const double memory = memory_value(terms, points + static_cast<std::int64_t>(blockIdx.x) * terms.d);
    if (threadIdx.x == 0) record->memory[blockIdx.x] = memory;
}

__global__ void record_losses_kernel(const double* partials, int blocks, int K, PassRecord* record) {
    for (int k = threadIdx.x; k < K; k += blockDim.x) record->losses[k] = sum_partials(partials, blocks, K, k);
}

template <class T>
__global__ void information_update_kernel(std::int64_t d, const T* J, const T* G, T* J_next) {
    for (std::int64_t e = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; e < d * d;
         e += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
        const std::int64_t i = e / d, j = e - i * d;  // row-major
        J_next[e] = J[e] + gram_at(G, d, i, j);
    }
}

}  // namespace

template <class T>
void launch_newton_system(cudaStream_t stream, const SurrogateTerms<T>& terms, const T* theta, const T* gx,
                          const double* s_partials, int blocks, const T* G, T* g, T* H, SystemFlags* flags) {
    newton_system_kernel<T><<<1, kThreads, 0, stream>>>(terms, theta, gx, s_partials, blocks, G, g, H, flags);
    RH_CUDA_LAUNCHED();
}

template <class T>
void launch_majorizer_matrix(cudaStream_t stream, const SurrogateTerms<T>& terms, const T* G, T* H,
                             SystemFlags* flags) {
    majorizer_matrix_kernel<T><<<1, kThreads, 0, stream>>>(terms, G, H, flags);
    RH_CUDA_LAUNCHED();
}

template <class T>
void launch_gradient(cudaStream_t stream, const SurrogateTerms<T>& terms, const T* theta, const T* gx,
                     const double* s_partials, int blocks, T* g) {
    gradient_kernel<T><<<1, kThreads, 0, stream>>>(terms, theta, gx, s_partials, blocks, g);
    RH_CUDA_LAUNCHED();
}

template <class T>
void launch_search_memory(cudaStream_t stream, const SurrogateTerms<T>& terms, const T* theta, const T* step,
                          double first, int exponent_step, int count, T* points, PassRecord* record) {
    search_memory_kernel<T><<<count, kThreads, 0, stream>>>(terms, theta, step, first, exponent_step, points, record);
    RH_CUDA_LAUNCHED();
}

template <class T>
void launch_point_memory(cudaStream_t stream, const SurrogateTerms<T>& terms, const T* points, int count,
                         PassRecord* record) {
    point_memory_kernel<T><<<count, kThreads, 0, stream>>>(terms, points, record);
    RH_CUDA_LAUNCHED();
}

void launch_record_losses(cudaStream_t stream, const double* partials, int blocks, int K, PassRecord* record) {
    record_losses_kernel<<<1, 32, 0, stream>>>(partials, blocks, K, record);
    RH_CUDA_LAUNCHED();
}

template <class T>
void launch_information_update(cudaStream_t stream, std::int64_t d, const T* J, const T* G, T* J_next) {
    information_update_kernel<T><<<row_blocks(d * d), kThreads, 0, stream>>>(d, J, G, J_next);
    RH_CUDA_LAUNCHED();
}

#define RH_INSTANTIATE(T)                                                                                           \
    template void launch_newton_system<T>(cudaStream_t, const SurrogateTerms<T>&, const T*, const T*,              \
                                          const double*, int, const T*, T*, T*, SystemFlags*);                     \
    template void launch_majorizer_matrix<T>(cudaStream_t, const SurrogateTerms<T>&, const T*, T*, SystemFlags*);  \
    template void launch_gradient<T>(cudaStream_t, const SurrogateTerms<T>&, const T*, const T*, const double*,    \
                                     int, T*);                                                                     \
    template void launch_search_memory<T>(cudaStream_t, const SurrogateTerms<T>&, const T*, const T*, double, int, \
                                          int, T*, PassRecord*);                                                   \
    template void launch_point_memory<T>(cudaStream_t, const SurrogateTerms<T>&, const T*, int, PassRecord*);      \
    template void launch_information_update<T>(cudaStream_t, std::int64_t, const T*, const T*, T*);
RH_INSTANTIATE(float)
RH_INSTANTIATE(double)
#undef RH_INSTANTIATE

}  // namespace rh::cuda

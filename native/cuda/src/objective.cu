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
// (core::MemoryAlongStep), its sums in memory_value's order: a warp a row
// of J D0 and J step (rows i = warp, warp + kWarps, ...), each warp's terms
// in its lane 0, then sum_over_warps. So a and
// history0 have the bits of memory_value's sums at theta, which the
// accepted point's f comes from: a trial near t = 0 and the value it is
// compared with differ by the last steps' rounding only. Every thread of
// the block calls it; every thread gets the sums.
template <class T>
__device__ core::MemoryAlongStep step_memory(const SurrogateTerms<T>& terms, const T* theta, const T* step) {
    auto D0 = [&](std::int64_t j) { return static_cast<double>(theta[j] - terms.theta_prev[j]); };
    auto S = [&](std::int64_t j) { return static_cast<double>(step[j]); };
    const int lane = static_cast<int>(threadIdx.x) & 31, warp = static_cast<int>(threadIdx.x) >> 5;
    double sums[6] = {};  // a, b1, b2, c, history0, history1
    for (std::int64_t i = warp; i < terms.d; i += kWarps) {
        const double jd0 = information_row_by_warp(terms, i, D0), jstep = information_row_by_warp(terms, i, S);
        if (lane == 0) {
            const double d0 = D0(i), s = S(i);
            sums[0] += d0 * jd0;
            sums[1] += s * jd0;
            sums[2] += d0 * jstep;
            sums[3] += s * jstep;
            if (terms.uses_history) {
                sums[4] += d0 * static_cast<double>(terms.history[i]);
                sums[5] += s * static_cast<double>(terms.history[i]);
            }
        }
    }
    sum_over_warps(sums);
    core::MemoryAlongStep m;
    m.a = sums[0];
    m.b1 = sums[1];
    m.b2 = sums[2];
    m.c = sums[3];
    m.history0 = sums[4];
    m.history1 = sums[5];
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
                                     int exponent_step, T* points, PassLosses losses, PassRecord* record) {
    const int k = blockIdx.x;
    if (threadIdx.x < 32) {
        const double sum = warp_sum_over_blocks(losses.partials, losses.K, k, losses.blocks);
        if (threadIdx.x == 0) record->losses[k] = sum;
    }
    const T scaled = static_cast<T>(ldexp(first, k * exponent_step));
    T* point = points + static_cast<std::int64_t>(k) * terms.d;
    for (std::int64_t j = threadIdx.x; j < terms.d; j += blockDim.x) point[j] = moved(theta[j], scaled, step[j]);
    block_barrier();
    const double memory = memory_value(terms, point);
    if (threadIdx.x == 0) record->memory[k] = memory;
    if (k != 0) return;
    const core::MemoryAlongStep along = step_memory(terms, theta, step);
    if (threadIdx.x == 0) record->along = along;
}

template <class T>
__global__ void point_memory_kernel(SurrogateTerms<T> terms, const T* points, PassLosses losses, double* losses_out,
                                    double* memory_out) {
    const int k = blockIdx.x;
    if (threadIdx.x < 32) {
        const double sum = warp_sum_over_blocks(losses.partials, losses.K, k, losses.blocks);
        if (threadIdx.x == 0) losses_out[k] = sum;
    }
    const double memory = memory_value(terms, points + static_cast<std::int64_t>(k) * terms.d);
    if (threadIdx.x == 0) memory_out[k] = memory;
}

template <class T>
__global__ void publish_kernel(const SystemFlags* flags, PassRecord* record, std::int64_t n1, const T* values1,
                               T* host1, std::int64_t n2, const T* values2, T* host2) {
    if (flags != nullptr && blockIdx.x == 0 && threadIdx.x == 0) record->system = *flags;
    const std::int64_t stride = static_cast<std::int64_t>(gridDim.x) * blockDim.x;
    const std::int64_t first = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
    for (std::int64_t i = first; i < n1; i += stride) host1[i] = values1[i];
    for (std::int64_t i = first; i < n2; i += stride) host2[i] = values2[i];
}

template <class T>
__global__ void receive_kernel(const PassInputs* host_inputs, PassInputs* inputs, std::int64_t n,
                               const T* host_values, T* values) {
    if (host_inputs != nullptr && blockIdx.x == 0 && threadIdx.x == 0) *inputs = *host_inputs;
    const std::int64_t stride = static_cast<std::int64_t>(gridDim.x) * blockDim.x;
    for (std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride)
        values[i] = host_values[i];
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
                          double first, int exponent_step, int count, T* points, const PassLosses& losses,
                          PassRecord* record) {
    search_memory_kernel<T><<<count, kThreads, 0, stream>>>(terms, theta, step, first, exponent_step, points, losses,
                                                            record);
    RH_CUDA_LAUNCHED();
}

template <class T>
void launch_point_memory(cudaStream_t stream, const SurrogateTerms<T>& terms, const T* points, int count,
                         const PassLosses& losses, double* losses_out, double* memory_out) {
    point_memory_kernel<T><<<count, kThreads, 0, stream>>>(terms, points, losses, losses_out, memory_out);
    RH_CUDA_LAUNCHED();
}

template <class T>
void launch_publish(cudaStream_t stream, const SystemFlags* flags, PassRecord* record, std::int64_t n1,
                    const T* values1, T* host1, std::int64_t n2, const T* values2, T* host2) {
    publish_kernel<T><<<row_blocks(n1 > n2 ? n1 : n2), kThreads, 0, stream>>>(flags, record, n1, values1, host1, n2,
                                                                              values2, host2);
    RH_CUDA_LAUNCHED();
}

template <class T>
void launch_receive(cudaStream_t stream, const PassInputs* host_inputs, PassInputs* inputs, std::int64_t n,
                    const T* host_values, T* values) {
    receive_kernel<T><<<row_blocks(n), kThreads, 0, stream>>>(host_inputs, inputs, n, host_values, values);
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
                                          int, T*, const PassLosses&, PassRecord*);                                \
    template void launch_point_memory<T>(cudaStream_t, const SurrogateTerms<T>&, const T*, int, const PassLosses&, \
                                         double*, double*);                                                        \
    template void launch_publish<T>(cudaStream_t, const SystemFlags*, PassRecord*, std::int64_t, const T*, T*,     \
                                    std::int64_t, const T*, T*);                                                   \
    template void launch_receive<T>(cudaStream_t, const PassInputs*, PassInputs*, std::int64_t, const T*, T*);     \
    template void launch_information_update<T>(cudaStream_t, std::int64_t, const T*, const T*, T*);
RH_INSTANTIATE(float)
RH_INSTANTIATE(double)
#undef RH_INSTANTIATE

}  // namespace rh::cuda

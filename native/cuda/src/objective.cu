#include "objective.cuh"

#include "batch_constants.cuh"

#include "core/memory_along_step.hpp"
#include "engine_internal.cuh"
#include "grid_last_block.cuh"
#include "huber_kernels.cuh"
#include "launch.cuh"
#include "objective_device.cuh"

namespace rh::cuda {

static_assert(kPassPoints >= kLineSearchSteps && kPassPoints >= kDoublingSteps && kPassPoints >= kLammTrialsPerPass,
              "a pass record holds every trial point of a pass");

namespace {

// ceil(d / kWarps) blocks: a warp a column of H (columns w, w + warps of
// the grid, ...), each block's largest column and symmetry verdict into the
// scratch, the last block's warp 0 their maximum and union into the flags
// (a maximum and a union: the same values in any order).
template <class T>
__device__ void assemble_system_over_grid(const SurrogateTerms<T>& terms, const T* G, T* H, SystemFlags* flags,
                                          const GridScratch& scratch) {
    __shared__ int asymmetric;
    if (threadIdx.x == 0) asymmetric = 0;
    block_barrier();
    double largest = 0.0;
    system_columns<T, kWalkUnroll>(terms, G, H, static_cast<int>(blockIdx.x * kWarps + (threadIdx.x >> 5)),
                                   static_cast<int>(gridDim.x * kWarps), &largest, &asymmetric);
    largest = block_max(largest);
    if (threadIdx.x == 0) {
        scratch.values[2 * blockIdx.x] = largest;
        scratch.values[2 * blockIdx.x + 1] = asymmetric != 0 ? 1.0 : 0.0;
    }
    if (!last_block_of_group(scratch.counters, gridDim.x) || threadIdx.x >= 32) return;
    const double most = warp_max_of_parts(scratch.values, gridDim.x, 2);
    const double any_asymmetric = warp_max_of_parts(scratch.values + 1, gridDim.x, 2);  // a union of 0/1
    if (threadIdx.x == 0) write_system_flags(flags, any_asymmetric != 0.0, most);
}

inline int system_blocks(std::int64_t d) { return static_cast<int>((d + kWarps - 1) / kWarps); }

// g's rows by the first kWarps threads of each block (row blockIdx.x kWarps
// + t: spread over the grid's multiprocessors), H over the grid.
template <class T>
__global__ void newton_system_kernel(SurrogateTerms<T> terms, const T* theta, const T* gx, const double* s_partials,
                                     int blocks, const T* G, T* g, T* H, SystemFlags* flags, GridScratch scratch,
                                     const SurrogateTerms<T>* terms_on_device) {
    read_terms(terms_on_device, terms);
    const double score_sum = block_score_sum(s_partials, blocks);
    if (threadIdx.x < kWarps)
        gradient_rows<T, kWalkUnroll>(terms, theta, gx, score_sum, blockIdx.x * kWarps + threadIdx.x,
                                      static_cast<std::int64_t>(gridDim.x) * kWarps, g);
    assemble_system_over_grid(terms, G, H, flags, scratch);
}

template <class T>
__global__ void majorizer_matrix_kernel(SurrogateTerms<T> terms, const T* G, T* H, SystemFlags* flags,
                                        GridScratch scratch) {
    assemble_system_over_grid(terms, G, H, flags, scratch);
}

// Blocks of one warp, a thread a row.
template <class T>
__global__ void gradient_kernel(SurrogateTerms<T> terms, const T* theta, const T* gx, const double* s_partials,
                                int blocks, T* g) {
    const double score_sum = block_score_sum(s_partials, blocks);
    gradient_rows<T, kWalkUnroll>(terms, theta, gx, score_sum, blockIdx.x * blockDim.x + threadIdx.x,
                                  static_cast<std::int64_t>(gridDim.x) * blockDim.x, g);
}

// theta - t step rounded in T, each operation rounded once (no contraction
// into an FMA): the bits core::SearchSteps::form gives on the host.
__device__ inline float moved(float theta, float t, float step) { return __fsub_rn(theta, __fmul_rn(t, step)); }
__device__ inline double moved(double theta, double t, double step) { return __dsub_rn(theta, __dmul_rn(t, step)); }

// The memory kernels' groups: blockIdx.y a group (a point, or the memory
// term along a step), ceil(d / kWarps) blocks each, a warp a row of J v
// into the scratch (row i of vector v at values[v d + i]). The group's last
// block then adds the rows as memory_value's block does (rows w, w +
// kWarps, ... into the w-th total, the totals in warp order), so the sums
// have memory_value's bits.
template <class T>
__device__ inline void rows_by_warps(const SurrogateTerms<T>& terms, const GridScratch& scratch, std::int64_t vector,
                                     auto&& v) {
    const std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * kWarps + (threadIdx.x >> 5);
    if (i >= terms.d) return;
    const double row = information_row_by_warp<T, kRowUnroll>(terms, i, v);
    if ((threadIdx.x & 31) == 0) scratch.values[vector * terms.d + i] = row;
}

// The K sums of a group's rows in memory_value's order, by the last block;
// add_row(i, sums) adds row i's terms. Every thread gets the sums.
template <int K>
__device__ inline void sums_in_warp_order(std::int64_t d, auto&& add_row, double (&values)[K]) {
    __shared__ double warp_values[kWarps][K];
    if (threadIdx.x < kWarps) {
        double sums[K] = {};
        strided_loop<kRowUnroll>(static_cast<std::int64_t>(threadIdx.x), d, std::int64_t{kWarps},
                                 [&](std::int64_t i) { add_row(i, sums); });
        for (int k = 0; k < K; ++k) warp_values[threadIdx.x][k] = sums[k];
    }
    block_barrier();
    add_in_warp_order(warp_values, values);
}

// The losses of point k (the pass's row kernel's partials), by group k's
// first block's first warp.
__device__ inline void point_loss(const PassLosses& losses, int k, double* out) {
    if (blockIdx.x != 0 || threadIdx.x >= 32) return;
    const double sum = warp_sum_over_blocks(losses.partials, losses.K, k, losses.blocks);
    if (threadIdx.x == 0) *out = sum;
}

// Groups 0..count-1: the points; group count: the memory term along the
// step (core::MemoryAlongStep: a, b1, b2, c, history0, history1 from rows
// of J D0 and J step, vectors count and count + 1).
template <class T>
__global__ void search_memory_kernel(SurrogateTerms<T> terms, const T* theta, const T* step, double first,
                                     int exponent_step, T* points, PassLosses losses, PassRecord* record,
                                     GridScratch scratch, const SurrogateTerms<T>* terms_on_device) {
    read_terms(terms_on_device, terms);
    const int k = blockIdx.y, count = static_cast<int>(gridDim.y) - 1;
    const std::int64_t d = terms.d;
    auto D0 = [&](std::int64_t j) { return static_cast<double>(theta[j] - terms.theta_prev[j]); };
    auto S = [&](std::int64_t j) { return static_cast<double>(step[j]); };
    const T scaled = static_cast<T>(ldexp(first, k * exponent_step));
    auto D = [&](std::int64_t j) { return static_cast<double>(moved(theta[j], scaled, step[j]) - terms.theta_prev[j]); };
    if (k < count) {
        point_loss(losses, k, &record->losses[k]);
        if (blockIdx.x == 0) {
            T* point = points + static_cast<std::int64_t>(k) * d;
            for (std::int64_t j = threadIdx.x; j < d; j += blockDim.x) point[j] = moved(theta[j], scaled, step[j]);
        }
        rows_by_warps(terms, scratch, k, D);
    } else {
        rows_by_warps(terms, scratch, count, D0);
        rows_by_warps(terms, scratch, count + 1, S);
    }
    if (!last_block_of_group(scratch.counters + k, gridDim.x)) return;
    if (k < count) {
        const double* rows = scratch.values + static_cast<std::int64_t>(k) * d;
        double sums[2];
        sums_in_warp_order(d, [&](std::int64_t i, double (&s)[2]) { add_memory_row(terms, i, D(i), load_part(rows + i), s); },
                           sums);
        if (threadIdx.x == 0) record->memory[k] = memory_from_sums(terms, sums[0], sums[1]);
        return;
    }
    const double* jd0_rows = scratch.values + static_cast<std::int64_t>(count) * d;
    const double* jstep_rows = jd0_rows + d;
    double sums[6];  // a, b1, b2, c, history0, history1
    sums_in_warp_order(d, [&](std::int64_t i, double (&s)[6]) {
        const double d0 = D0(i), si = S(i), jd0 = load_part(jd0_rows + i), jstep = load_part(jstep_rows + i);
        s[0] += d0 * jd0;
        s[1] += si * jd0;
        s[2] += d0 * jstep;
        s[3] += si * jstep;
        if (terms.uses_history) {
            s[4] += d0 * static_cast<double>(terms.history[i]);
            s[5] += si * static_cast<double>(terms.history[i]);
        }
    }, sums);
    if (threadIdx.x != 0) return;
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
    record->along = m;
}

template <class T>
__global__ void point_memory_kernel(SurrogateTerms<T> terms, const T* points, PassLosses losses, double* losses_out,
                                    double* memory_out, GridScratch scratch) {
    const int k = blockIdx.y;
    const std::int64_t d = terms.d;
    const T* point = points + static_cast<std::int64_t>(k) * d;
    auto D = [&](std::int64_t j) { return static_cast<double>(point[j] - terms.theta_prev[j]); };
    point_loss(losses, k, &losses_out[k]);
    rows_by_warps(terms, scratch, k, D);
    if (!last_block_of_group(scratch.counters + k, gridDim.x)) return;
    const double* rows = scratch.values + static_cast<std::int64_t>(k) * d;
    double sums[2];
    sums_in_warp_order(d, [&](std::int64_t i, double (&s)[2]) { add_memory_row(terms, i, D(i), load_part(rows + i), s); },
                       sums);
    if (threadIdx.x == 0) memory_out[k] = memory_from_sums(terms, sums[0], sums[1]);
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
                          const double* s_partials, int blocks, const T* G, T* g, T* H, SystemFlags* flags,
                          const GridScratch& scratch, const SurrogateTerms<T>* terms_on_device) {
    newton_system_kernel<T><<<system_blocks(terms.d), kThreads, 0, stream>>>(terms, theta, gx, s_partials, blocks,
                                                                             G, g, H, flags, scratch, terms_on_device);
    RH_CUDA_LAUNCHED();
}

template <class T>
void launch_majorizer_matrix(cudaStream_t stream, const SurrogateTerms<T>& terms, const T* G, T* H,
                             SystemFlags* flags, const GridScratch& scratch) {
    majorizer_matrix_kernel<T><<<system_blocks(terms.d), kThreads, 0, stream>>>(terms, G, H, flags, scratch);
    RH_CUDA_LAUNCHED();
}

template <class T>
void launch_gradient(cudaStream_t stream, const SurrogateTerms<T>& terms, const T* theta, const T* gx,
                     const double* s_partials, int blocks, T* g) {
    gradient_kernel<T><<<static_cast<int>((terms.d + 31) / 32), 32, 0, stream>>>(terms, theta, gx, s_partials, blocks,
                                                                                g);
    RH_CUDA_LAUNCHED();
}

template <class T>
void launch_search_memory(cudaStream_t stream, const SurrogateTerms<T>& terms, const T* theta, const T* step,
                          double first, int exponent_step, int count, T* points, const PassLosses& losses,
                          PassRecord* record, const GridScratch& scratch, const SurrogateTerms<T>* terms_on_device) {
    const dim3 grid(system_blocks(terms.d), count + 1);
    search_memory_kernel<T><<<grid, kThreads, 0, stream>>>(terms, theta, step, first, exponent_step, points, losses,
                                                           record, scratch, terms_on_device);
    RH_CUDA_LAUNCHED();
}

template <class T>
void launch_point_memory(cudaStream_t stream, const SurrogateTerms<T>& terms, const T* points, int count,
                         const PassLosses& losses, double* losses_out, double* memory_out,
                         const GridScratch& scratch) {
    const dim3 grid(system_blocks(terms.d), count);
    point_memory_kernel<T><<<grid, kThreads, 0, stream>>>(terms, points, losses, losses_out, memory_out, scratch);
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
                                          const double*, int, const T*, T*, T*, SystemFlags*, const GridScratch&,  \
                                          const SurrogateTerms<T>*);                                               \
    template void launch_majorizer_matrix<T>(cudaStream_t, const SurrogateTerms<T>&, const T*, T*, SystemFlags*,   \
                                             const GridScratch&);                                                  \
    template void launch_gradient<T>(cudaStream_t, const SurrogateTerms<T>&, const T*, const T*, const double*,    \
                                     int, T*);                                                                     \
    template void launch_search_memory<T>(cudaStream_t, const SurrogateTerms<T>&, const T*, const T*, double, int, \
                                          int, T*, const PassLosses&, PassRecord*, const GridScratch&,             \
                                          const SurrogateTerms<T>*);                                               \
    template void launch_point_memory<T>(cudaStream_t, const SurrogateTerms<T>&, const T*, int, const PassLosses&, \
                                         double*, double*, const GridScratch&);                                    \
    template void launch_publish<T>(cudaStream_t, const SystemFlags*, PassRecord*, std::int64_t, const T*, T*,     \
                                    std::int64_t, const T*, T*);                                                   \
    template void launch_receive<T>(cudaStream_t, const PassInputs*, PassInputs*, std::int64_t, const T*, T*);     \
    template void launch_information_update<T>(cudaStream_t, std::int64_t, const T*, const T*, T*);
RH_INSTANTIATE(float)
RH_INSTANTIATE(double)
#undef RH_INSTANTIATE

}  // namespace rh::cuda

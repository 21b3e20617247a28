#include "ladder_kernels.cuh"

#include "core/solve_rule.hpp"
#include "engine_internal.cuh"
#include "grid_last_block.cuh"
#include "launch.cuh"
#include "objective_device.cuh"

namespace rh::cuda {

namespace {

// Over 2 B blocks of kThreads (B = ceil(d / kThreads)): blocks b < B a
// thread a column of Hinv (its |sum|, i in order; each block's largest into
// the scratch after the step's d values), blocks B + b a thread a row of
// the step (j in order, into the scratch: the step is kept only when the
// rung accepts it). The last block: the largest column (a maximum: the same
// value in any order), rcond, the verdict, and the step when usable. Every
// value has the bits the one block of the small rung's layout gave.
inline int inverse_blocks(std::int64_t d) { return static_cast<int>((d + kThreads - 1) / kThreads); }

// Entry (i, j) of Hinv: a full matrix (LU's), or potri's upper triangle of
// a symmetric one (the Cholesky rung's: (i, j) read at (min, max)).
template <class T>
__device__ inline double inverse_entry(const T* Hinv, std::int64_t d, bool upper_only, std::int64_t i,
                                       std::int64_t j) {
    const bool mirrored = upper_only && i > j;
    return static_cast<double>(mirrored ? Hinv[j + i * d] : Hinv[i + j * d]);
}

template <class T>
__global__ void step_from_inverse_kernel(std::int64_t d, const T* Hinv, const T* g, const int* info,
                                         bool cholesky_inverse, T* step, SystemFlags* flags, GridScratch scratch) {
    const bool require_symmetric = cholesky_inverse;
    const unsigned column_blocks = gridDim.x / 2;
    double* step_values = scratch.values;
    double* column_maxima = scratch.values + d;
    if (blockIdx.x < column_blocks) {
        const std::int64_t j = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
        double largest_column = 0.0;
        if (j < d) {
            double column = 0.0;
            strided_loop<kWalkUnroll>(std::int64_t{0}, d, std::int64_t{1},
                                      [&](std::int64_t i) { column += fabs(inverse_entry(Hinv, d, cholesky_inverse, i, j)); });
            largest_column = column > largest_column ? column : largest_column;
        }
        largest_column = block_max(largest_column);
        if (threadIdx.x == 0) column_maxima[blockIdx.x] = largest_column;
    } else {
        const std::int64_t i = static_cast<std::int64_t>(blockIdx.x - column_blocks) * blockDim.x + threadIdx.x;
        if (i < d) {
            double sum = 0.0;
            strided_loop<kWalkUnroll>(std::int64_t{0}, d, std::int64_t{1}, [&](std::int64_t j) {
                sum += inverse_entry(Hinv, d, cholesky_inverse, i, j) * static_cast<double>(g[j]);
            });
            step_values[i] = sum;
        }
    }
    if (!last_block_of_group(scratch.counters, gridDim.x)) return;
    __shared__ double largest;
    if (threadIdx.x < 32) {
        const double most = warp_max_of_parts(column_maxima, column_blocks, 1);
        if (threadIdx.x == 0) largest = most;
    }
    block_barrier();
    const double norm = flags->norm1;
    const double rcond = core::reciprocal_condition(norm, largest);
    const bool usable = *info == 0 && (!require_symmetric || flags->symmetric != 0) &&
                        core::regular_solve_allowed<T>(rcond, d);
    double finite = 1.0;
    if (usable) {
        for (std::int64_t i = threadIdx.x; i < d; i += blockDim.x) {
            step[i] = static_cast<T>(load_part(step_values + i));
            finite = isfinite(step[i]) ? finite : 0.0;
        }
    }
    finite = block_sum(finite == 1.0 ? 0.0 : 1.0);
    if (threadIdx.x == 0) {
        flags->info = *info;
        flags->rcond = rcond;
        flags->step_ok = usable && finite == 0.0;
    }
}

template <class T>
__global__ void __launch_bounds__(kRungThreads) small_cholesky_step_kernel(std::int64_t d, const T* H, const T* g,
                                                                           T* step, SystemFlags* flags) {
    small_cholesky_step<T, kSmallSystem, kRungThreads>(d, H, g, step, flags);
}

template <class T>
__global__ void min_norm_step_kernel(std::int64_t d, const T* U, const T* S, const T* VT, const T* g,
                                     const int* info, T* step, SystemFlags* flags) {
    // x = V diag(1/s) U' g over the singular values above eps d s_max.
    __shared__ double coefficient[1024];
    const double cutoff = core::singular_rcond_threshold<T>(d) * static_cast<double>(S[0]);
    for (std::int64_t k = threadIdx.x; k < d; k += blockDim.x) {
        double dot = 0.0;
        for (std::int64_t i = 0; i < d; ++i) dot += static_cast<double>(U[i + k * d]) * static_cast<double>(g[i]);
        const double s = static_cast<double>(S[k]);
        coefficient[k] = s > cutoff ? dot / s : 0.0;
    }
    block_barrier();
    double bad = 0.0;
    for (std::int64_t j = threadIdx.x; j < d; j += blockDim.x) {
        double sum = 0.0;
        for (std::int64_t k = 0; k < d; ++k) sum += static_cast<double>(VT[k + j * d]) * coefficient[k];
        step[j] = static_cast<T>(sum);
        bad += isfinite(step[j]) ? 0.0 : 1.0;
    }
    bad = block_sum(bad);
    if (threadIdx.x == 0) {
        flags->info = *info;
        flags->step_ok = *info == 0 && bad == 0.0;
    }
}

template <class T>
__global__ void symmetric_min_norm_step_kernel(std::int64_t d, const T* Q, const T* lambda, const T* g,
                                               const int* info, T* step, SystemFlags* flags) {
    // x = Q diag(1/lambda) Q' g over |lambda| above eps d max |lambda| (the
    // singular values of a symmetric H are |lambda|: the SVD rung's cutoff).
    __shared__ double coefficient[1024];
    const double lowest = fabs(static_cast<double>(lambda[0])), highest = fabs(static_cast<double>(lambda[d - 1]));
    const double cutoff = core::singular_rcond_threshold<T>(d) * (lowest > highest ? lowest : highest);
    for (std::int64_t k = threadIdx.x; k < d; k += blockDim.x) {
        double dot = 0.0;
        for (std::int64_t i = 0; i < d; ++i) dot += static_cast<double>(Q[i + k * d]) * static_cast<double>(g[i]);
        const double value = static_cast<double>(lambda[k]);
        coefficient[k] = fabs(value) > cutoff ? dot / value : 0.0;
    }
    block_barrier();
    double bad = 0.0;
    for (std::int64_t j = threadIdx.x; j < d; j += blockDim.x) {
        double sum = 0.0;
        for (std::int64_t k = 0; k < d; ++k) sum += static_cast<double>(Q[j + k * d]) * coefficient[k];
        step[j] = static_cast<T>(sum);
        bad += isfinite(step[j]) ? 0.0 : 1.0;
    }
    bad = block_sum(bad);
    if (threadIdx.x == 0) {
        flags->info = *info;
        flags->step_ok = *info == 0 && bad == 0.0;
    }
}

template <class T>
__global__ void identity_kernel(std::int64_t d, T* out) {
    for (std::int64_t e = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; e < d * d;
         e += static_cast<std::int64_t>(gridDim.x) * blockDim.x)
        out[e] = e % (d + 1) == 0 ? T(1) : T(0);
}

}  // namespace

template <class T>
void launch_step_from_inverse(cudaStream_t stream, std::int64_t d, const T* Hinv, const T* g, const int* info,
                              bool cholesky_inverse, T* step, SystemFlags* flags, const GridScratch& scratch) {
    step_from_inverse_kernel<T><<<2 * inverse_blocks(d), kThreads, 0, stream>>>(d, Hinv, g, info, cholesky_inverse,
                                                                                step, flags, scratch);
    RH_CUDA_LAUNCHED();
}

template <class T>
void launch_small_cholesky_step(cudaStream_t stream, std::int64_t d, const T* H, const T* g, T* step,
                                SystemFlags* flags) {
    small_cholesky_step_kernel<T><<<1, kRungThreads, 0, stream>>>(d, H, g, step, flags);
    RH_CUDA_LAUNCHED();
}

template <class T>
void launch_min_norm_step(cudaStream_t stream, std::int64_t d, const T* U, const T* S, const T* VT, const T* g,
                          const int* info, T* step, SystemFlags* flags) {
    min_norm_step_kernel<T><<<1, kThreads, 0, stream>>>(d, U, S, VT, g, info, step, flags);
    RH_CUDA_LAUNCHED();
}

template <class T>
void launch_symmetric_min_norm_step(cudaStream_t stream, std::int64_t d, const T* Q, const T* lambda, const T* g,
                                    const int* info, T* step, SystemFlags* flags) {
    symmetric_min_norm_step_kernel<T><<<1, kThreads, 0, stream>>>(d, Q, lambda, g, info, step, flags);
    RH_CUDA_LAUNCHED();
}

template <class T>
void launch_identity(cudaStream_t stream, std::int64_t d, T* out) {
    identity_kernel<T><<<row_blocks(d * d), kThreads, 0, stream>>>(d, out);
    RH_CUDA_LAUNCHED();
}

#define RH_INSTANTIATE(T)                                                                                           \
    template void launch_step_from_inverse<T>(cudaStream_t, std::int64_t, const T*, const T*, const int*, bool,   \
                                              T*, SystemFlags*, const GridScratch&);                            \
    template void launch_small_cholesky_step<T>(cudaStream_t, std::int64_t, const T*, const T*, T*,               \
                                                SystemFlags*);                                                  \
    template void launch_min_norm_step<T>(cudaStream_t, std::int64_t, const T*, const T*, const T*, const T*,      \
                                          const int*, T*, SystemFlags*);                                        \
    template void launch_symmetric_min_norm_step<T>(cudaStream_t, std::int64_t, const T*, const T*, const T*,     \
                                                    const int*, T*, SystemFlags*);                              \
    template void launch_identity<T>(cudaStream_t, std::int64_t, T*);
RH_INSTANTIATE(float)
RH_INSTANTIATE(double)
#undef RH_INSTANTIATE

}  // namespace rh::cuda

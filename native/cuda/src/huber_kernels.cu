#include "huber_kernels.cuh"

#include "core/huber.hpp"
#include "engine_internal.cuh"
#include "launch.cuh"

namespace rh::cuda {

namespace {

template <class T>
__global__ void check_batch_kernel(std::int64_t n, std::int64_t p, const T* X, const T* y, const T* w,
                                   double* partials) {
    double sums[kBatchCheckSums] = {};
    const std::int64_t stride = static_cast<std::int64_t>(gridDim.x) * blockDim.x;
    const std::int64_t first = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
    for (std::int64_t e = first; e < n * p; e += stride) sums[kNonFiniteX] += isfinite(X[e]) ? 0.0 : 1.0;
    for (std::int64_t i = first; i < n; i += stride) {
        sums[kNonFiniteY] += isfinite(y[i]) ? 0.0 : 1.0;
        if (w != nullptr) {
            const T wi = w[i];
            const bool finite = isfinite(wi);
            sums[kNonFiniteW] += finite ? 0.0 : 1.0;
            sums[kNegativeW] += wi < T(0) ? 1.0 : 0.0;
            sums[kPositiveW] += wi > T(0) ? 1.0 : 0.0;
            sums[kWeightSum] += finite ? static_cast<double>(wi) : 0.0;
        }
    }
    store_block_sums<kBatchCheckSums>(sums, partials);
}

template <class T>
__global__ void start_residual_kernel(std::int64_t n, const T* y, const T* w, const T* b, T tau, T* r,
                                      double* partials) {
    const T intercept = b != nullptr ? *b : T(0);
    const T half_tau_squared = (T(0.5) * tau) * tau;
    double loss[1] = {0.0};
    for (std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
         i += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
        const T ri = y[i] - (r[i] + intercept);
        r[i] = ri;
        loss[0] += static_cast<double>(w[i] * core::huber_loss_fast(ri, tau, half_tau_squared));
    }
    store_block_sums<1>(loss, partials);
}

template <class T>
__global__ void meat_weights_kernel(std::int64_t n, const T* r, const T* w, T tau, T* out) {
    for (std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
         i += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
        const T s = core::huber_score(r[i], tau);
        out[i] = w[i] * (s * s);
    }
}

template <class T>
__global__ void score_rows_kernel(std::int64_t n, ResidualAdvance<T> advance, const T* w, T tau, T h, T* r, T* s,
                                  T* c, double* partials) {
    const double t = advance.t != nullptr ? *advance.t : 0.0;
    const int trial = advance.trial != nullptr ? *advance.trial : -1;
    const T scaled = static_cast<T>(t);
    const T inverse_two_h = T(1) / (T(2) * h);
    double score_sum[1] = {0.0};
    for (std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
         i += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
        T ri = r[i];
        if (t > 0.0) {
            ri = fma(scaled, advance.dz[i], ri);  // as the line search formed it
            r[i] = ri;
        } else if (trial >= 0) {
            ri = advance.trial_residuals[i + static_cast<std::int64_t>(trial) * n];
            r[i] = ri;
        }
        const T wi = w[i];
        const T si = wi * core::huber_score(ri, tau);
        s[i] = si;
        score_sum[0] += static_cast<double>(si);
        if (c != nullptr) c[i] = wi * core::smoothed_curvature_fast(ri, tau, h, inverse_two_h);
    }
    store_block_sums<1>(score_sum, partials);
}

template <class T>
__global__ void weighted_rows_kernel(std::int64_t n, std::int64_t p, bool intercept, const T* X, const T* c,
                                     T* W) {
    const std::int64_t d = p + (intercept ? 1 : 0);
    for (std::int64_t e = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; e < n * d;
         e += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
        const std::int64_t i = e / d, j = e - i * d;
        const T scale = sqrt(c[i]);
        W[e] = j < p ? scale * X[i * p + j] : scale;
    }
}

template <class T>
__global__ void line_search_losses_kernel(std::int64_t n, const T* r, T* dz, const T* b, const T* w, T tau,
                                          double* partials) {
    const T intercept = b != nullptr ? *b : T(0);
    const T half_tau_squared = (T(0.5) * tau) * tau;
    double losses[kLineSearchSteps] = {};
    for (std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
         i += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
        const T dzi = dz[i] + intercept;
        dz[i] = dzi;
        const T ri = r[i], wi = w[i];
        T t = T(1);
#pragma unroll
        for (int k = 0; k < kLineSearchSteps; ++k) {
            const T rk = fma(t, dzi, ri);
            losses[k] += static_cast<double>(wi * core::huber_loss_fast(rk, tau, half_tau_squared));
            t *= T(0.5);
        }
    }
    store_block_sums<kLineSearchSteps>(losses, partials);
}

template <class T>
__global__ void doubling_losses_kernel(std::int64_t n, const T* r, const T* dz, const T* w, T tau, double* partials) {
    const T half_tau_squared = (T(0.5) * tau) * tau;
    double losses[kDoublingSteps] = {};
    for (std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
         i += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
        const T dzi = dz[i], ri = r[i], wi = w[i];
        T u = T(2);
#pragma unroll
        for (int k = 0; k < kDoublingSteps; ++k) {
            const T rk = fma(u, dzi, ri);
            losses[k] += static_cast<double>(wi * core::huber_loss_fast(rk, tau, half_tau_squared));
            u *= T(2);
        }
    }
    store_block_sums<kDoublingSteps>(losses, partials);
}

template <class T>
__global__ void lamm_trials_kernel(std::int64_t n, int trials, const T* r, const T* DZ, const T* b, const T* w,
                                   T tau, T* trial_residuals, double* partials) {
    const T half_tau_squared = (T(0.5) * tau) * tau;
    double losses[kLammTrialsPerPass] = {};
    for (std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
         i += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
        const T ri = r[i], wi = w[i];
#pragma unroll
        for (int k = 0; k < kLammTrialsPerPass; ++k) {
            if (k >= trials) break;
            const T rk = ri - (DZ[i + k * n] + (b != nullptr ? b[k] : T(0)));
            trial_residuals[i + k * n] = rk;
            losses[k] += static_cast<double>(wi * core::huber_loss_fast(rk, tau, half_tau_squared));
        }
    }
    store_block_sums<kLammTrialsPerPass>(losses, partials);
}

template <class T>
__global__ void add_intercept_kernel(std::int64_t n, const T* b, T* out) {
    const T intercept = *b;
    for (std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
         i += static_cast<std::int64_t>(gridDim.x) * blockDim.x)
        out[i] = out[i] + intercept;
}

// Each of the K sums by one warp (warp_sum_over_blocks).
__global__ void finish_sums_kernel(const double* partials, int blocks, int K, double* out) {
    const int k = static_cast<int>(threadIdx.x) >> 5;
    if (k >= K) return;  // whole warps
    const double sum = warp_sum_over_blocks(partials, K, k, blocks);
    if ((threadIdx.x & 31) == 0) out[k] = sum;
}

template <class T>
__global__ void fill_kernel(std::int64_t n, T value, T* out) {
    for (std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
         i += static_cast<std::int64_t>(gridDim.x) * blockDim.x)
        out[i] = value;
}

}  // namespace

template <class T>
void launch_check_batch(cudaStream_t stream, std::int64_t n, std::int64_t p, const T* X, const T* y, const T* w,
                        double* partials) {
    check_batch_kernel<T><<<row_blocks(n * p), kThreads, 0, stream>>>(n, p, X, y, w, partials);
    RH_CUDA_LAUNCHED();
}

template <class T>
void launch_start_residual(cudaStream_t stream, std::int64_t n, const T* y, const T* w, const T* b, T tau, T* r,
                           double* partials) {
    start_residual_kernel<T><<<row_blocks(n), kThreads, 0, stream>>>(n, y, w, b, tau, r, partials);
    RH_CUDA_LAUNCHED();
}

template <class T>
void launch_score_rows(cudaStream_t stream, std::int64_t n, const ResidualAdvance<T>& advance, const T* w, T tau,
                       T h, T* r, T* s, T* c, double* partials) {
    score_rows_kernel<T><<<row_blocks(n), kThreads, 0, stream>>>(n, advance, w, tau, h, r, s, c, partials);
    RH_CUDA_LAUNCHED();
}

template <class T>
void launch_meat_weights(cudaStream_t stream, std::int64_t n, const T* r, const T* w, T tau, T* out) {
    meat_weights_kernel<T><<<row_blocks(n), kThreads, 0, stream>>>(n, r, w, tau, out);
    RH_CUDA_LAUNCHED();
}

template <class T>
void launch_weighted_rows(cudaStream_t stream, std::int64_t n, std::int64_t p, bool intercept, const T* X,
                          const T* c, T* W) {
    const std::int64_t d = p + (intercept ? 1 : 0);
    weighted_rows_kernel<T><<<row_blocks(n * d), kThreads, 0, stream>>>(n, p, intercept, X, c, W);
    RH_CUDA_LAUNCHED();
}

template <class T>
void launch_line_search_losses(cudaStream_t stream, std::int64_t n, const T* r, T* dz, const T* b, const T* w,
                               T tau, double* partials) {
    line_search_losses_kernel<T><<<row_blocks(n), kThreads, 0, stream>>>(n, r, dz, b, w, tau, partials);
    RH_CUDA_LAUNCHED();
}

template <class T>
void launch_doubling_losses(cudaStream_t stream, std::int64_t n, const T* r, const T* dz, const T* w, T tau,
                            double* partials) {
    doubling_losses_kernel<T><<<row_blocks(n), kThreads, 0, stream>>>(n, r, dz, w, tau, partials);
    RH_CUDA_LAUNCHED();
}

template <class T>
void launch_lamm_trials(cudaStream_t stream, std::int64_t n, int trials, const T* r, const T* DZ, const T* b,
                        const T* w, T tau, T* trial_residuals, double* partials) {
    lamm_trials_kernel<T><<<row_blocks(n), kThreads, 0, stream>>>(n, trials, r, DZ, b, w, tau, trial_residuals,
                                                                   partials);
    RH_CUDA_LAUNCHED();
}

template <class T>
void launch_add_intercept(cudaStream_t stream, std::int64_t n, const T* b, T* out) {
    add_intercept_kernel<T><<<row_blocks(n), kThreads, 0, stream>>>(n, b, out);
    RH_CUDA_LAUNCHED();
}

void launch_finish_sums(cudaStream_t stream, const double* partials, int blocks, int K, double* out) {
    if (K < 1 || K > 32) throw Failure(core::Status::internal_error, "launch_finish_sums: K must be 1 to 32");
    finish_sums_kernel<<<1, 32 * K, 0, stream>>>(partials, blocks, K, out);
    RH_CUDA_LAUNCHED();
}

template <class T>
void launch_fill(cudaStream_t stream, std::int64_t n, T value, T* out) {
    fill_kernel<T><<<row_blocks(n), kThreads, 0, stream>>>(n, value, out);
    RH_CUDA_LAUNCHED();
}

#define RH_INSTANTIATE(T)                                                                                         \
    template void launch_check_batch<T>(cudaStream_t, std::int64_t, std::int64_t, const T*, const T*, const T*,  \
                                        double*);                                                                 \
    template void launch_start_residual<T>(cudaStream_t, std::int64_t, const T*, const T*, const T*, T, T*,      \
                                           double*);                                                              \
    template void launch_score_rows<T>(cudaStream_t, std::int64_t, const ResidualAdvance<T>&, const T*, T, T, T*, \
                                       T*, T*, double*);                                                          \
    template void launch_weighted_rows<T>(cudaStream_t, std::int64_t, std::int64_t, bool, const T*, const T*,    \
                                          T*);                                                                    \
    template void launch_meat_weights<T>(cudaStream_t, std::int64_t, const T*, const T*, T, T*);                  \
    template void launch_line_search_losses<T>(cudaStream_t, std::int64_t, const T*, T*, const T*, const T*, T,  \
                                               double*);                                                          \
    template void launch_doubling_losses<T>(cudaStream_t, std::int64_t, const T*, const T*, const T*, T,         \
                                            double*);                                                             \
    template void launch_lamm_trials<T>(cudaStream_t, std::int64_t, int, const T*, const T*, const T*, const T*, \
                                        T, T*, double*);                                                          \
    template void launch_add_intercept<T>(cudaStream_t, std::int64_t, const T*, T*);                              \
    template void launch_fill<T>(cudaStream_t, std::int64_t, T, T*);
RH_INSTANTIATE(float)
RH_INSTANTIATE(double)
#undef RH_INSTANTIATE

}  // namespace rh::cuda

#include "linear_solver.cuh"

#include <algorithm>
#include <string>
#include <vector>

#include "core/invariants.hpp"
#include "ladder_kernels.cuh"
#include "vendor_calls.cuh"

namespace rh::cuda {

template <class T>
void LinearSolver<T>::reserve(int device, cusolverDnHandle_t handle, std::int64_t d) {
    if (device != device_) {  // (an engine's device never changes; the buffers would follow it)
        device_ = device;
        reserved_d_ = 0;
        d_ = 0;
    }
    reserved_d_ = std::max(reserved_d_, d);
    if (reserved_d_ > kSmallSystem) reserve_dense(handle);
}

template <class T>
void LinearSolver<T>::reserve_dense(cusolverDnHandle_t handle) {
    const std::int64_t d = reserved_d_;
    if (d <= d_) return;
    const int n = static_cast<int>(d);
    grow(factor_, device_, d * d);
    grow(inverse_, device_, d * d);
    grow(pivots_, device_, d);
    grow(info_, device_, 2);
    const int lwork = std::max({vendor::cholesky_workspace(handle, n, factor_.data()),
                                vendor::cholesky_inverse_workspace(handle, n, factor_.data()),
                                vendor::lu_workspace(handle, n, factor_.data())});
    grow(work_, device_, std::max(lwork, 1));
    work_size_ = static_cast<int>(work_.size());
    d_ = d;
    svd_work_size_ = 0;  // the SVD's buffers follow the size on next need
    eigen_work_size_ = 0;
}

template <class T>
std::int64_t LinearSolver<T>::bytes() const noexcept {
    return factor_.bytes() + inverse_.bytes() + work_.bytes() + pivots_.bytes() + info_.bytes() +
           singular_values_.bytes() + left_.bytes() + right_.bytes() + svd_work_.bytes() + svd_rwork_.bytes() +
           eigen_work_.bytes();
}

template <class T>
void LinearSolver<T>::cholesky_step(cudaStream_t stream, cusolverDnHandle_t handle, std::int64_t d, const T* H,
                                    const T* g, T* step, SystemFlags* flags, const GridScratch& scratch) {
    if (small_rung(d)) {
        launch_small_cholesky_step<T>(stream, d, H, g, step, flags);
        return;
    }
    reserve_dense(handle);
    const int n = static_cast<int>(d);
    RH_CUDA_CHECK(cudaMemcpyAsync(factor_.data(), H, sizeof(T) * d * d, cudaMemcpyDeviceToDevice, stream));
    vendor::cholesky(handle, n, factor_.data(), work_.data(), work_size_, info_.data());
    // H^-1 in place of the factor (its upper triangle): potri took 0.70x-0.88x
    // potrs with d right-hand sides in float64 for d = 65-257 on an H100
    // (docs/benchmarks/inverse_probe_h100.json). A failed factorization's
    // info rejects the step whatever potri leaves.
    vendor::cholesky_inverse(handle, n, factor_.data(), work_.data(), work_size_, info_.data() + 1);
    launch_step_from_inverse<T>(stream, d, factor_.data(), g, info_.data(), true, step, flags, scratch);
}

template <class T>
core::SolveRoute LinearSolver<T>::fallback_step(cudaStream_t stream, cusolverDnHandle_t handle, std::int64_t d,
                                                const T* H, const T* g, T* step, SystemFlags* flags,
                                                SystemFlags* host_flags, int* syncs, const GridScratch& scratch) {
    reserve_dense(handle);
    const int n = static_cast<int>(d);
    auto read_flags = [&] {
        RH_CUDA_CHECK(cudaMemcpyAsync(host_flags, flags, sizeof(SystemFlags), cudaMemcpyDeviceToHost, stream));
        RH_CUDA_CHECK(cudaStreamSynchronize(stream));
        ++*syncs;
    };
    RH_CUDA_CHECK(cudaMemcpyAsync(factor_.data(), H, sizeof(T) * d * d, cudaMemcpyDeviceToDevice, stream));
    vendor::lu(handle, n, factor_.data(), work_.data(), pivots_.data(), info_.data());
    launch_identity<T>(stream, d, inverse_.data());
    vendor::lu_solve(handle, n, n, factor_.data(), pivots_.data(), inverse_.data(), info_.data() + 1);
    launch_step_from_inverse<T>(stream, d, inverse_.data(), g, info_.data(), false, step, flags, scratch);
    read_flags();
    if (host_flags->step_ok) return core::SolveRoute::lu;

    if (host_flags->symmetric) {  // the SVD of a symmetric H from its eigendecomposition
        if (eigen_work_size_ == 0) {
            grow(singular_values_, device_, d);
            grow(eigen_work_, device_,
                 std::max(vendor::symmetric_eigen_workspace(handle, n, factor_.data(), singular_values_.data()), 1));
            eigen_work_size_ = static_cast<int>(eigen_work_.size());
        }
        RH_CUDA_CHECK(cudaMemcpyAsync(factor_.data(), H, sizeof(T) * d * d, cudaMemcpyDeviceToDevice, stream));
        vendor::symmetric_eigen(handle, n, factor_.data(), singular_values_.data(), eigen_work_.data(),
                                eigen_work_size_, info_.data());
        launch_symmetric_min_norm_step<T>(stream, d, factor_.data(), singular_values_.data(), g, info_.data(), step,
                                          flags);
        read_flags();
        if (host_flags->step_ok) return core::SolveRoute::least_squares;
    }
    if (svd_work_size_ == 0) {  // the SVD's buffers, on first need
        grow(singular_values_, device_, d);
        grow(left_, device_, d * d);
        grow(right_, device_, d * d);
        grow(svd_rwork_, device_, d);
        grow(svd_work_, device_, std::max(vendor::svd_workspace(handle, n, T{}), 1));
        svd_work_size_ = static_cast<int>(svd_work_.size());
    }
    RH_CUDA_CHECK(cudaMemcpyAsync(factor_.data(), H, sizeof(T) * d * d, cudaMemcpyDeviceToDevice, stream));
    vendor::svd(handle, n, factor_.data(), singular_values_.data(), left_.data(), right_.data(), svd_work_.data(),
                svd_work_size_, svd_rwork_.data(), info_.data());
    launch_min_norm_step<T>(stream, d, left_.data(), singular_values_.data(), right_.data(), g, info_.data(), step,
                            flags);
    read_flags();
    if (host_flags->step_ok) return core::SolveRoute::least_squares;
    // Why the last rung failed: a system that is not finite (finite inputs
    // that overflowed it) gets every engine's message. A failure path: the
    // copies and the synchronization cost nothing that matters.
    std::vector<T> system(d * d + d);
    RH_CUDA_CHECK(cudaMemcpyAsync(system.data(), H, sizeof(T) * d * d, cudaMemcpyDeviceToHost, stream));
    RH_CUDA_CHECK(cudaMemcpyAsync(system.data() + d * d, g, sizeof(T) * d, cudaMemcpyDeviceToHost, stream));
    RH_CUDA_CHECK(cudaStreamSynchronize(stream));
    ++*syncs;
    if (!core::all_finite(system.data(), static_cast<std::int64_t>(system.size())))
        throw Failure(core::Status::numerical_failure, core::system_overflow_message<T>());
    throw Failure(core::Status::numerical_failure,
                  "the Newton system could not be solved (SVD least squares did not converge, info " +
                      std::to_string(host_flags->info) + ")");
}

template class LinearSolver<float>;
template class LinearSolver<double>;

}  // namespace rh::cuda

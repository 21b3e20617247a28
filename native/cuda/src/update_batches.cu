// Several batches in one call (rh_cuda_engine_update_batches, ABI 1.6):
// consecutive slices of one batch, each absorbed by update() exactly as a
// batch of its own would be (the same launches on the same values, so the
// same bits as the loop of updates), all of them or none. The state before
// the call is copied on the device first (ws_.*_before, beside its host
// mirror and counters): a slice that fails puts it back before its error
// leaves, and after a successful call revert() puts it back, as it undoes a
// single update. Large host slices are staged ahead of their updates
// (host_staging.cuh): the next slices' copies overlap this one's solve;
// a device batch's slices before the last do not wait for their closings.
#include <algorithm>

#include "core/invariants.hpp"
#include "cuda_engine.cuh"

namespace rh::cuda {

template <class T>
std::vector<UpdateReport> CudaEngine<T>::update_batches(const BatchInput& batch, std::int64_t batch_size,
                                                        const core::SolverConfig& config, void* coefficients_out) {
    if (batch_size < 1) throw Failure(core::Status::invalid_argument, "batch_size must be a positive integer");
    // What can be checked before anything is copied or staged (each update checks its slice again).
    check_configuration(config);
    BatchInput first_slice = batch;
    first_slice.rows = std::min(batch_size, batch.rows);
    check_batch_description(first_slice, element_type_of<T>(), device_, p_, true);
    core::check_room_for_batch(batch.rows, counters_);
    const std::int64_t slices = 1 + (batch.rows - 1) / batch_size;  // rows >= 1 (checked); no overflow
    if (slices == 1) return {update(batch, config, coefficients_out)};

    DeviceGuard guard(device_);
    revertible_ = false;
    revert_to_before_ = false;
    keep_state_before();
    std::vector<UpdateReport> reports;
    reports.reserve(static_cast<std::size_t>(slices));
    auto absorb = [&](std::int64_t k, const BatchInput& slice) {
        reports.push_back(update(slice, config, k + 1 == slices ? coefficients_out : nullptr));
    };
    try {
        if (batch.memory == BatchMemory::host && HostStaging<T>::pays(first_slice.rows, p_) &&
            staging_for(first_slice.rows, batch.sample_weight != nullptr)) {
            staging_->run(batch, batch_size, stream_, absorb);
        } else {
            for (std::int64_t k = 0; k < slices; ++k) absorb(k, slice_of(batch, batch_size, k));
        }
    } catch (...) {
        // Earlier device slices' closings may still read the caller's
        // arrays (slice_of): the device is past them before the error leaves.
        if (batch.memory == BatchMemory::device && cudaStreamSynchronize(stream_) != cudaSuccess) cudaGetLastError();
        try {
            restore_state_before();
        } catch (const Failure&) {  // a broken device: the slice's own error is the one to report
        }
        throw;
    }
    revert_to_before_ = true;
    return reports;
}

template <class T>
bool CudaEngine<T>::staging_for(std::int64_t rows, bool weighted) {
    try {
        if (!staging_) staging_ = std::make_unique<HostStaging<T>>(device_);
        staging_->reserve(rows * (p_ + 1 + (weighted ? 1 : 0)));
        return true;
    } catch (const Failure&) {  // no room for the staging buffers: the slices go through their own copies
        staging_.reset();
        cudaGetLastError();
        return false;
    }
}

template <class T>
BatchInput CudaEngine<T>::slice_of(const BatchInput& batch, std::int64_t batch_size, std::int64_t k) const {
    const std::int64_t first = k * batch_size;
    BatchInput slice = batch;
    slice.rows = std::min(batch_size, batch.rows - first);
    slice.X = static_cast<const T*>(batch.X) + first * p_;
    slice.y = static_cast<const T*>(batch.y) + first;
    slice.sample_weight =
        batch.sample_weight == nullptr ? nullptr : static_cast<const T*>(batch.sample_weight) + first;
    if (k > 0) slice.producer_stream = 0;  // the first slice joined the producer's stream
    // A caller's device array outlives the call, so a slice before the last
    // is the engine's to read until the call returns: its update neither
    // copies it nor waits for its closing, which runs on beside the next
    // slice's host work. The last slice's wait comes after every earlier
    // slice's work in the stream, so the call returns with none of it
    // reading the caller's array (a failed call waits for the stream).
    if (batch.memory == BatchMemory::device && first + slice.rows < batch.rows) slice.engine_owned = true;
    return slice;
}

template <class T>
void CudaEngine<T>::keep_state_before() {
    ws_.reserve_state_before(device_, d_, tracks_meat_);
    RH_CUDA_CHECK(cudaMemcpyAsync(ws_.theta_before.data(), ws_.theta_current.data(), sizeof(T) * d_,
                                  cudaMemcpyDeviceToDevice, stream_));
    RH_CUDA_CHECK(cudaMemcpyAsync(ws_.J_before.data(), ws_.J_current.data(), sizeof(T) * d_ * d_,
                                  cudaMemcpyDeviceToDevice, stream_));
    if (tracks_meat_)
        RH_CUDA_CHECK(cudaMemcpyAsync(ws_.meat_before.data(), ws_.meat_current.data(), sizeof(T) * d_ * d_,
                                      cudaMemcpyDeviceToDevice, stream_));
    before_.host_theta = host_theta_;
    before_.counters = counters_;
}

template <class T>
void CudaEngine<T>::restore_state_before() {
    revertible_ = false;
    revert_to_before_ = false;
    host_theta_ = before_.host_theta;  // the host mirror and counters first: they cannot fail
    counters_ = before_.counters;
    RH_CUDA_CHECK(cudaMemcpyAsync(ws_.theta_current.data(), ws_.theta_before.data(), sizeof(T) * d_,
                                  cudaMemcpyDeviceToDevice, stream_));
    RH_CUDA_CHECK(cudaMemcpyAsync(ws_.J_current.data(), ws_.J_before.data(), sizeof(T) * d_ * d_,
                                  cudaMemcpyDeviceToDevice, stream_));
    if (tracks_meat_)
        RH_CUDA_CHECK(cudaMemcpyAsync(ws_.meat_current.data(), ws_.meat_before.data(), sizeof(T) * d_ * d_,
                                      cudaMemcpyDeviceToDevice, stream_));
}

template class CudaEngine<float>;
template class CudaEngine<double>;

}  // namespace rh::cuda

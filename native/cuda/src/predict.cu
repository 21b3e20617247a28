// Prediction: Z theta for a batch on the host (copied through the
// engine's buffers) or on the device (in place, ordered after the producer's
// stream and before the consumer's).
#include "cuda_engine.cuh"
#include "huber_kernels.cuh"
#include "vendor_calls.cuh"

namespace rh::cuda {

template <class T>
void CudaEngine<T>::predict(const BatchInput& batch, void* out) {
    check_batch_description(batch, element_type_of<T>(), device_, p_, false);
    if (out == nullptr) throw Failure(core::Status::invalid_argument, "out must not be null");
    DeviceGuard guard(device_);
    closing_done_.wait_if_ahead();  // a host batch regrows the row buffers the last closing may still read
    const std::int64_t n = batch.rows;
    const bool host = batch.memory == BatchMemory::host;
    const T* X = static_cast<const T*>(batch.X);
    T* target = static_cast<T*>(out);
    if (host) {
        ws_.reserve_rows(device_, n, p_, d_, true, false, stream_);
        RH_CUDA_CHECK(cudaMemcpyAsync(ws_.X.data(), batch.X, sizeof(T) * n * p_, cudaMemcpyHostToDevice, stream_));
        X = ws_.X.data();
        target = ws_.r.data();
    } else {
        if (batch.producer_stream != 0 && reinterpret_cast<cudaStream_t>(batch.producer_stream) != stream_) {
            cudaEvent_t ready;
            RH_CUDA_CHECK(cudaEventCreateWithFlags(&ready, cudaEventDisableTiming));
            RH_CUDA_CHECK(cudaEventRecord(ready, reinterpret_cast<cudaStream_t>(batch.producer_stream)));
            RH_CUDA_CHECK(cudaStreamWaitEvent(stream_, ready, 0));
            RH_CUDA_CHECK(cudaEventDestroy(ready));
        }
    }
    vendor::rows_times(blas_, static_cast<int>(n), static_cast<int>(p_), X, ws_.theta_current.data(), target);
    if (intercept_) launch_add_intercept<T>(stream_, n, ws_.theta_current.data() + p_, target);
    if (host) {
        RH_CUDA_CHECK(cudaMemcpyAsync(out, target, sizeof(T) * n, cudaMemcpyDeviceToHost, stream_));
        RH_CUDA_CHECK(cudaStreamSynchronize(stream_));
    } else if (batch.producer_stream != 0 && reinterpret_cast<cudaStream_t>(batch.producer_stream) != stream_) {
        // The consumer's stream waits for the prediction.
        cudaEvent_t done;
        RH_CUDA_CHECK(cudaEventCreateWithFlags(&done, cudaEventDisableTiming));
        RH_CUDA_CHECK(cudaEventRecord(done, stream_));
        RH_CUDA_CHECK(cudaStreamWaitEvent(reinterpret_cast<cudaStream_t>(batch.producer_stream), done, 0));
        RH_CUDA_CHECK(cudaEventDestroy(done));
    }
}

template class CudaEngine<float>;
template class CudaEngine<double>;

}  // namespace rh::cuda

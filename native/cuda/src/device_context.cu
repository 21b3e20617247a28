#include "device_context.cuh"

#include "engine_internal.cuh"

namespace rh::cuda {

DeviceContext::DeviceContext(int device, std::uint64_t borrowed_stream, bool fast_math) : device_(device) {
    DeviceGuard guard(device_);
    try {
        if (borrowed_stream != 0) {
            stream_ = reinterpret_cast<cudaStream_t>(borrowed_stream);
        } else {
            RH_CUDA_CHECK(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
            owns_stream_ = true;
        }
        RH_CUBLAS_CHECK(cublasCreate(&blas_));
        RH_CUBLAS_CHECK(cublasSetStream(blas_, stream_));
        RH_CUBLAS_CHECK(cublasSetMathMode(blas_, fast_math ? CUBLAS_TF32_TENSOR_OP_MATH : CUBLAS_DEFAULT_MATH));
        RH_CUSOLVER_CHECK(cusolverDnCreate(&solver_));
        RH_CUSOLVER_CHECK(cusolverDnSetStream(solver_, stream_));
    } catch (...) {
        release();
        throw;
    }
}

DeviceContext::~DeviceContext() {
    drain();
    release();
}

void DeviceContext::drain() const noexcept {
    int previous = -1;
    if (cudaGetDevice(&previous) != cudaSuccess) previous = -1;
    if (previous != device_) cudaSetDevice(device_);
    if (stream_ != nullptr) cudaStreamSynchronize(stream_);
    if (previous >= 0 && previous != device_) cudaSetDevice(previous);
    cudaGetLastError();
}

void DeviceContext::release() noexcept {
    if (solver_ != nullptr) cusolverDnDestroy(solver_);
    if (blas_ != nullptr) cublasDestroy(blas_);
    if (owns_stream_ && stream_ != nullptr) cudaStreamDestroy(stream_);
    solver_ = nullptr;
    blas_ = nullptr;
    stream_ = nullptr;
}

}  // namespace rh::cuda

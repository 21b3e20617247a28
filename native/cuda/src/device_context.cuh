// An engine's place on its device: the stream its work is queued on (its
// own non-blocking stream, or the caller's, borrowed) and the cuBLAS and
// cuSOLVER handles bound to it, created together and released together
// (after the stream drained), whatever fails half-way.
#pragma once

#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <cusolverDn.h>

#include <cstdint>

namespace rh::cuda {

class DeviceContext {
public:
    // On `device` (made current for the call): `borrowed_stream` 0 creates
    // the engine's own stream; `fast_math` lets cuBLAS use TF32 tensor-core
    // math (float32 products), else strict precision. Throws Failure.
    DeviceContext(int device, std::uint64_t borrowed_stream, bool fast_math);
    ~DeviceContext();
    DeviceContext(const DeviceContext&) = delete;
    DeviceContext& operator=(const DeviceContext&) = delete;

    // Waits for the work queued on the stream (errors ignored): what an
    // engine does before its buffers go.
    void drain() const noexcept;

    int device() const noexcept { return device_; }
    cudaStream_t stream() const noexcept { return stream_; }
    bool owns_stream() const noexcept { return owns_stream_; }
    cublasHandle_t blas() const noexcept { return blas_; }
    cusolverDnHandle_t solver() const noexcept { return solver_; }

private:
    void release() noexcept;

    int device_;
    cudaStream_t stream_ = nullptr;
    bool owns_stream_ = false;
    cublasHandle_t blas_ = nullptr;
    cusolverDnHandle_t solver_ = nullptr;
};

}  // namespace rh::cuda

// An engine's place on its device: the stream its work is queued on (its
// own non-blocking stream, or the caller's, borrowed) and the cuBLAS and
// cuSOLVER handles bound to it, released together (after the stream
// drained), whatever fails half-way.
//
// The handles are the process's, per device, lent to one engine at a time
// (reuse_pool.hpp): making and destroying a pair cost about 430 us on the
// H100 (engine_setup_costs.cu, seventeenth session), three quarters of a
// new engine's setup and teardown, which a cold stream (a new estimator)
// pays inside its timer. A pair given back is bound to the default stream
// and kept; the next engine binds it to its own stream and sets its math
// and pointer modes (a pair that refuses them is destroyed, not kept). A
// device's pool keeps at most 8 idle pairs. Pools are per device index,
// for the device's primary context (the runtime API's): an engine built
// under another current context (a driver-API context of the caller's) is
// not supported.
#pragma once

#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <cusolverDn.h>

#include <cstdint>

#include "reuse_pool.hpp"

namespace rh::cuda {

// A cuBLAS and a cuSOLVER handle made on one device (destroyed only when a
// pool cannot keep them).
struct VendorHandles {
    explicit VendorHandles(int device);
    ~VendorHandles();
    VendorHandles(const VendorHandles&) = delete;
    VendorHandles& operator=(const VendorHandles&) = delete;

    int device;
    cublasHandle_t blas = nullptr;
    cusolverDnHandle_t solver = nullptr;
};

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
    cublasHandle_t blas() const noexcept { return handles_->blas; }
    cusolverDnHandle_t solver() const noexcept { return handles_->solver; }

private:
    void release() noexcept;

    int device_;
    cudaStream_t stream_ = nullptr;
    bool owns_stream_ = false;
    ReusePool<VendorHandles>::Lease handles_;
};

}  // namespace rh::cuda

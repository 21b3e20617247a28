#include "device_context.cuh"

#include <map>
#include <memory>
#include <mutex>

#include "engine_internal.cuh"

namespace rh::cuda {

namespace {

struct DevicePools {
    std::mutex mutex;
    std::map<int, std::unique_ptr<ReusePool<VendorHandles>>> pools;
};

// Never destroyed: the handles are kept until the process ends, and
// destroying them after the CUDA runtime has shut down at exit is an error.
DevicePools& device_pools() {
    static auto* pools = new DevicePools();
    return *pools;
}

// The idle pairs a device's pool keeps: each holds its cuBLAS workspace and
// cuSOLVER's (device memory no engine counts), so a burst of engines alive
// at once does not leave its whole count of pairs behind.
constexpr std::size_t kIdleHandlesPerDevice = 8;

ReusePool<VendorHandles>& handles_pool(int device) {
    DevicePools& all = device_pools();
    std::lock_guard<std::mutex> lock(all.mutex);
    auto& pool = all.pools[device];
    if (!pool) pool = std::make_unique<ReusePool<VendorHandles>>(kIdleHandlesPerDevice);
    return *pool;
}

// f() with `device` current, the caller's device restored after; never
// throws (for destructors: a device that cannot be made current leaves f
// to run on the current one, and every error is cleared).
template <class F>
void on_device_quietly(int device, F&& f) noexcept {
    int previous = -1;
    if (cudaGetDevice(&previous) != cudaSuccess) previous = -1;
    if (previous != device) cudaSetDevice(device);
    f();
    if (previous >= 0 && previous != device) cudaSetDevice(previous);
    cudaGetLastError();
}

}  // namespace

VendorHandles::VendorHandles(int device_index) : device(device_index) {
    DeviceGuard guard(device);
    try {
        RH_CUBLAS_CHECK(cublasCreate(&blas));
        RH_CUSOLVER_CHECK(cusolverDnCreate(&solver));
    } catch (...) {
        if (blas != nullptr) cublasDestroy(blas);
        throw;
    }
}

VendorHandles::~VendorHandles() {
    on_device_quietly(device, [this] {
        if (solver != nullptr) cusolverDnDestroy(solver);
        if (blas != nullptr) cublasDestroy(blas);
    });
}

DeviceContext::DeviceContext(int device, std::uint64_t borrowed_stream, bool fast_math) : device_(device) {
    DeviceGuard guard(device_);
    try {
        if (borrowed_stream != 0) {
            stream_ = reinterpret_cast<cudaStream_t>(borrowed_stream);
        } else {
            RH_CUDA_CHECK(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
            owns_stream_ = true;
        }
        handles_ = handles_pool(device_).acquire([this] { return std::make_unique<VendorHandles>(device_); });
    } catch (...) {
        release();
        throw;
    }
    try {
        RH_CUBLAS_CHECK(cublasSetStream(handles_->blas, stream_));
        RH_CUBLAS_CHECK(cublasSetMathMode(handles_->blas, fast_math ? CUBLAS_TF32_TENSOR_OP_MATH : CUBLAS_DEFAULT_MATH));
        RH_CUBLAS_CHECK(cublasSetPointerMode(handles_->blas, CUBLAS_POINTER_MODE_HOST));  // whatever a lender left
        RH_CUSOLVER_CHECK(cusolverDnSetStream(handles_->solver, stream_));
    } catch (...) {
        handles_.discard();  // a pair that refused its settings is not lent again
        release();
        throw;
    }
}

DeviceContext::~DeviceContext() {
    drain();
    release();
}

void DeviceContext::drain() const noexcept {
    on_device_quietly(device_, [this] {
        if (stream_ != nullptr) cudaStreamSynchronize(stream_);
    });
}

void DeviceContext::release() noexcept {
    if (handles_) {  // back to the pool bound to the default stream: ours may go next
        cublasSetStream(handles_->blas, nullptr);
        cusolverDnSetStream(handles_->solver, nullptr);
        handles_ = ReusePool<VendorHandles>::Lease();
    }
    if (owns_stream_ && stream_ != nullptr) cudaStreamDestroy(stream_);
    stream_ = nullptr;
    cudaGetLastError();
}

}  // namespace rh::cuda

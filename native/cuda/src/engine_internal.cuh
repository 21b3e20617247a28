// Internals shared by the CUDA engine's translation units: the error model
// (every CUDA, cuBLAS and cuSOLVER status becomes a core::EngineError with
// its own status code, translated once at the C boundary), the device
// guard, the per-device memory registry and its buffers, and the engine's
// type-erased interface.
#pragma once

#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <cusolverDn.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "core/solver_config.hpp"
#include "core/status.hpp"
#include "engine_types.hpp"
#include "pinned_blocks.hpp"

namespace rh::cuda {

// The engine's errors: core::EngineError with a CUDA-side message. Defined
// (its key function) in engine_internal.cu.
class Failure : public core::EngineError {
public:
    Failure(core::Status status, const std::string& message) : core::EngineError(status, message) {}
    ~Failure() override;
};

[[noreturn]] void throw_cuda(cudaError_t error, const char* call, const char* file, int line);
[[noreturn]] void throw_cublas(cublasStatus_t status, const char* call, const char* file, int line);
[[noreturn]] void throw_cusolver(cusolverStatus_t status, const char* call, const char* file, int line);

#define RH_CUDA_CHECK(call)                                                   \
    do {                                                                      \
        const cudaError_t rh_status_ = (call);                                \
        if (rh_status_ != cudaSuccess) ::rh::cuda::throw_cuda(rh_status_, #call, __FILE__, __LINE__); \
    } while (0)
#define RH_CUBLAS_CHECK(call)                                                 \
    do {                                                                      \
        const cublasStatus_t rh_status_ = (call);                             \
        if (rh_status_ != CUBLAS_STATUS_SUCCESS) ::rh::cuda::throw_cublas(rh_status_, #call, __FILE__, __LINE__); \
    } while (0)
#define RH_CUSOLVER_CHECK(call)                                               \
    do {                                                                      \
        const cusolverStatus_t rh_status_ = (call);                           \
        if (rh_status_ != CUSOLVER_STATUS_SUCCESS) ::rh::cuda::throw_cusolver(rh_status_, #call, __FILE__, __LINE__); \
    } while (0)
// After a kernel launch: the launch's own error (bad configuration).
#define RH_CUDA_LAUNCHED() RH_CUDA_CHECK(cudaGetLastError())

// Makes `device` current for a scope and restores the caller's device.
class DeviceGuard {
public:
    explicit DeviceGuard(int device);
    ~DeviceGuard();
    DeviceGuard(const DeviceGuard&) = delete;
    DeviceGuard& operator=(const DeviceGuard&) = delete;

private:
    int previous_ = -1;
};

// The process's device memory, per device: every engine allocation goes
// through here, so allocations are counted and a failed one is reported as
// out of memory (the engine keeps its previous buffers; a batch's row
// arrays, per-batch work, are placed again by the next batch).
class DeviceMemory {
public:
    static void* allocate(int device, std::size_t bytes);
    static void release(int device, void* pointer, std::size_t bytes) noexcept;
    static std::int64_t bytes_in_use(int device) noexcept;
    static std::int64_t allocations(int device) noexcept;
};

// A device array that grows (never shrinks) and counts its growths; or a
// view of another array's storage (an arena's, adopt_view), which it never
// releases and leaves for storage of its own when it must grow.
template <class T>
class DeviceArray {
public:
    DeviceArray() = default;
    ~DeviceArray() { reset(); }
    DeviceArray(const DeviceArray&) = delete;
    DeviceArray& operator=(const DeviceArray&) = delete;

    // Room for `count` elements on `device`; the old storage is released
    // only after the new one was allocated (an out-of-memory error leaves
    // the array as it was). Returns whether it allocated.
    bool reserve(int device, std::int64_t count) {
        if (count <= size_ && device == device_) return false;
        const std::int64_t grown = count < 1 ? 1 : count;
        void* fresh = DeviceMemory::allocate(device, static_cast<std::size_t>(grown) * sizeof(T));
        reset();
        data_ = static_cast<T*>(fresh);
        size_ = grown;
        device_ = device;
        return true;
    }
    // `count` elements at `data` on `device`, storage an array that outlives
    // this one owns: the array's own storage (if any) released first.
    void adopt_view(int device, T* data, std::int64_t count) noexcept {
        reset();
        data_ = data;
        size_ = count;
        device_ = device;
        owned_ = false;
    }
    void reset() noexcept {
        if (data_ != nullptr && owned_)
            DeviceMemory::release(device_, data_, static_cast<std::size_t>(size_) * sizeof(T));
        data_ = nullptr;
        size_ = 0;
        owned_ = true;
    }
    T* data() const noexcept { return data_; }
    std::int64_t size() const noexcept { return size_; }
    void swap(DeviceArray& other) noexcept {
        std::swap(data_, other.data_);
        std::swap(size_, other.size_);
        std::swap(device_, other.device_);
        std::swap(owned_, other.owned_);
    }
    std::int64_t bytes() const noexcept { return size_ * static_cast<std::int64_t>(sizeof(T)); }

private:
    T* data_ = nullptr;
    std::int64_t size_ = 0;
    int device_ = -1;
    bool owned_ = true;
};

// The process's pinned blocks (pinned_blocks.hpp): cudaHostAlloc, portable and mapped
// (an engine on any device may get a block another one gave back; kernels may read and write it).
struct PinnedHostAllocator {
    static void* allocate(std::size_t bytes);
};
BlockCache<PinnedHostAllocator>& pinned_blocks();

// Pinned host memory for what the engine reads back or uploads each update
// (flags, sums, the penalty mask and history direction): `count` elements,
// a block of the process's cache, given back when the array goes (its
// engine drains its stream before its members go).
template <class T>
class PinnedArray {
public:
    explicit PinnedArray(std::int64_t count)
        : block_(pinned_blocks().acquire(sizeof(T) * static_cast<std::size_t>(count))), count_(count) {}
    ~PinnedArray() { pinned_blocks().release(block_); }
    PinnedArray(const PinnedArray&) = delete;
    PinnedArray& operator=(const PinnedArray&) = delete;
    T* get() const noexcept { return static_cast<T*>(block_.pointer); }
    std::int64_t size() const noexcept { return count_; }

private:
    BlockCache<PinnedHostAllocator>::Block block_;
    std::int64_t count_ = 0;
};

// The engine behind the C ABI: one device, one dtype, one parameter count.
// It speaks core's types (engine_types.hpp); c_api.cu translates the ABI's.
class Engine {
public:
    virtual ~Engine();
    virtual void restore_state(const HostState& state) = 0;
    virtual void copy_state(HostState& state) = 0;
    virtual core::StateCounters counters() const = 0;
    // Absorbs one batch; its coefficients into coefficients_out (d values of
    // the engine's dtype on the host) unless null.
    virtual UpdateReport update(const BatchInput& batch, const core::SolverConfig& config,
                                void* coefficients_out) = 0;
    // Absorbs consecutive slices of `batch_size` rows of one batch (the last
    // may be shorter), each as update() absorbs a batch; all of them or none
    // (a failure leaves the state as it was before the call, and throws the
    // failing slice's error). The last slice's coefficients into
    // coefficients_out unless null; one report per slice.
    virtual std::vector<UpdateReport> update_batches(const BatchInput& batch, std::int64_t batch_size,
                                                     const core::SolverConfig& config, void* coefficients_out) = 0;
    virtual void predict(const BatchInput& batch, void* out) = 0;
    virtual void synchronize() = 0;
    virtual EngineFeatures features() const = 0;
    // Puts back the state the last successful update (or update_batches:
    // the state before the call) replaced (once, and only until another
    // update or restore is attempted).
    virtual void revert() = 0;
    int device() const noexcept { return device_; }

    // The message of the engine's last failure (rh_cuda_engine_last_error).
    std::string last_error;

protected:
    explicit Engine(int device) : device_(device) {}
    int device_;
};

// Throws Failure (unavailable) when no CUDA device is usable, or
// (invalid_argument) when `device` is not one of them.
void require_device(int device);

// An engine for `options` (throws Failure when none can be made).
std::unique_ptr<Engine> make_engine(const EngineOptions& options);

}  // namespace rh::cuda

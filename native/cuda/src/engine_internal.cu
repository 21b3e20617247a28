#include "engine_internal.cuh"

#include <array>
#include <atomic>
#include <mutex>
#include <string>

namespace rh::cuda {

Failure::~Failure() = default;
Engine::~Engine() = default;

namespace {

std::string where(const char* call, const char* file, int line) {
    std::string path(file);
    const auto slash = path.find_last_of('/');
    if (slash != std::string::npos) path = path.substr(slash + 1);
    return std::string(call) + " (" + path + ":" + std::to_string(line) + ")";
}

const char* cublas_status_name(cublasStatus_t status) {
    switch (status) {
        case CUBLAS_STATUS_NOT_INITIALIZED: return "CUBLAS_STATUS_NOT_INITIALIZED";
        case CUBLAS_STATUS_ALLOC_FAILED: return "CUBLAS_STATUS_ALLOC_FAILED";
        case CUBLAS_STATUS_INVALID_VALUE: return "CUBLAS_STATUS_INVALID_VALUE";
        case CUBLAS_STATUS_ARCH_MISMATCH: return "CUBLAS_STATUS_ARCH_MISMATCH";
        case CUBLAS_STATUS_MAPPING_ERROR: return "CUBLAS_STATUS_MAPPING_ERROR";
        case CUBLAS_STATUS_EXECUTION_FAILED: return "CUBLAS_STATUS_EXECUTION_FAILED";
        case CUBLAS_STATUS_INTERNAL_ERROR: return "CUBLAS_STATUS_INTERNAL_ERROR";
        case CUBLAS_STATUS_NOT_SUPPORTED: return "CUBLAS_STATUS_NOT_SUPPORTED";
        default: return "CUBLAS_STATUS_UNKNOWN";
    }
}

constexpr int kMaxDevices = 64;
struct DeviceCounters {
    std::atomic<std::int64_t> bytes{0};
    std::atomic<std::int64_t> allocations{0};
};
std::array<DeviceCounters, kMaxDevices>& device_counters() {
    static std::array<DeviceCounters, kMaxDevices> counters;
    return counters;
}

}  // namespace

void* PinnedHostAllocator::allocate(std::size_t bytes) {
    void* pointer = nullptr;
    RH_CUDA_CHECK(cudaHostAlloc(&pointer, bytes, cudaHostAllocPortable | cudaHostAllocMapped));
    return pointer;
}

BlockCache<PinnedHostAllocator>& pinned_blocks() {
    // Never destroyed: its blocks are in use until the process ends, and freeing pinned memory
    // after the CUDA runtime has shut down at exit is an error.
    static auto* cache = new BlockCache<PinnedHostAllocator>();
    return *cache;
}

void throw_cuda(cudaError_t error, const char* call, const char* file, int line) {
    cudaGetLastError();  // clear a sticky launch error so the engine stays usable
    core::Status status = core::Status::device_error;
    if (error == cudaErrorMemoryAllocation) status = core::Status::out_of_memory;
    if (error == cudaErrorNoDevice || error == cudaErrorInsufficientDriver || error == cudaErrorInvalidDevice ||
        error == cudaErrorInitializationError)
        status = core::Status::unavailable;
    throw Failure(status, std::string(cudaGetErrorName(error)) + ": " + cudaGetErrorString(error) + " in " +
                              where(call, file, line));
}

void throw_cublas(cublasStatus_t status, const char* call, const char* file, int line) {
    throw Failure(status == CUBLAS_STATUS_ALLOC_FAILED ? core::Status::out_of_memory : core::Status::device_error,
                  std::string(cublas_status_name(status)) + " in " + where(call, file, line));
}

void throw_cusolver(cusolverStatus_t status, const char* call, const char* file, int line) {
    throw Failure(status == CUSOLVER_STATUS_ALLOC_FAILED ? core::Status::out_of_memory : core::Status::device_error,
                  "cuSOLVER status " + std::to_string(static_cast<int>(status)) + " in " + where(call, file, line));
}

DeviceGuard::DeviceGuard(int device) {
    RH_CUDA_CHECK(cudaGetDevice(&previous_));
    if (previous_ != device) RH_CUDA_CHECK(cudaSetDevice(device));
}

DeviceGuard::~DeviceGuard() {
    int current = -1;
    if (cudaGetDevice(&current) == cudaSuccess && current != previous_) cudaSetDevice(previous_);
}

void* DeviceMemory::allocate(int device, std::size_t bytes) {
    void* pointer = nullptr;
    const cudaError_t error = cudaMalloc(&pointer, bytes);
    if (error != cudaSuccess) {
        cudaGetLastError();
        if (error == cudaErrorMemoryAllocation)
            throw Failure(core::Status::out_of_memory,
                          "out of device memory: " + std::to_string(bytes) + " bytes could not be allocated on device " +
                              std::to_string(device) + " (the batch is too large for the GPU; split it)");
        throw_cuda(error, "cudaMalloc", __FILE__, __LINE__);
    }
    if (device >= 0 && device < kMaxDevices) {
        device_counters()[device].bytes += static_cast<std::int64_t>(bytes);
        ++device_counters()[device].allocations;
    }
    return pointer;
}

void DeviceMemory::release(int device, void* pointer, std::size_t bytes) noexcept {
    cudaFree(pointer);
    if (device >= 0 && device < kMaxDevices) device_counters()[device].bytes -= static_cast<std::int64_t>(bytes);
}

std::int64_t DeviceMemory::bytes_in_use(int device) noexcept {
    return device >= 0 && device < kMaxDevices ? device_counters()[device].bytes.load() : 0;
}

std::int64_t DeviceMemory::allocations(int device) noexcept {
    return device >= 0 && device < kMaxDevices ? device_counters()[device].allocations.load() : 0;
}

}  // namespace rh::cuda

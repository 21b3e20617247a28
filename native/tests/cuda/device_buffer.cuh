// The kernel tests' device side: whether a device is there, and a buffer of
// T on it (allocated with the test, freed with it; gtest assertions on
// every CUDA call).
#pragma once

#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <cstddef>
#include <vector>

namespace rh::cuda::testing {

inline int device_count() {
    int count = 0;
    return cudaGetDeviceCount(&count) == cudaSuccess ? count : 0;
}

template <class T>
struct DeviceBuffer {
    T* data = nullptr;
    explicit DeviceBuffer(std::size_t count) { EXPECT_EQ(cudaMalloc(&data, sizeof(T) * (count ? count : 1)), cudaSuccess); }
    ~DeviceBuffer() { cudaFree(data); }
    DeviceBuffer(const DeviceBuffer&) = delete;
    DeviceBuffer& operator=(const DeviceBuffer&) = delete;
    void upload(const std::vector<T>& host) {
        if (host.empty()) return;
        ASSERT_EQ(cudaMemcpy(data, host.data(), sizeof(T) * host.size(), cudaMemcpyHostToDevice), cudaSuccess);
    }
    std::vector<T> download(std::size_t count) const {
        std::vector<T> host(count);
        EXPECT_EQ(cudaMemcpy(host.data(), data, sizeof(T) * count, cudaMemcpyDeviceToHost), cudaSuccess);
        return host;
    }
};

}  // namespace rh::cuda::testing

// update_batches' host slices staged ahead of their updates: while the
// engine's thread drives slice k's update, a background thread copies slice
// k + 1 from the caller's pageable memory, chunk by chunk, into a small ring
// of pinned chunks (chunk_stager.hpp, a few host threads per chunk), and the
// copy engine moves each filled chunk to the slice's device buffer on a
// stream of its own. Each update then reads its slice as a device batch of
// the same values (so the same bits as the loop of host updates). Two
// device buffers alternate; events order each reuse: a chunk is refilled
// after its transfer is done, a device buffer after the update that read it
// (its last kernels included) is done, an update after its slice arrived.
//
// The ring is pinned once per process and lent to each call
// (reuse_pool.hpp): pinning costs about 0.4 ms per MB (the H100 run of
// 2026-12-05: two whole pinned slices per new engine made the reference
// class's one call 2x slower than its loop), and a ring of
// kStagingChunks x kStagingChunkBytes is the same few MB whatever the slice.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>
#include <functional>
#include <memory>

#include "engine_internal.cuh"

namespace rh::cuda {

// Staging ahead pays when a slice of X is at least this large (smaller
// slices go through each update's own copy).
inline constexpr std::int64_t kStagingBytes = std::int64_t{1} << 20;
// The pinned ring: chunks and the bytes of each.
inline constexpr int kStagingChunks = 4;
inline constexpr std::size_t kStagingChunkBytes = std::size_t{2} << 20;

template <class T>
class HostStaging {
public:
    explicit HostStaging(int device);
    ~HostStaging();
    HostStaging(const HostStaging&) = delete;
    HostStaging& operator=(const HostStaging&) = delete;

    // Whether slices of `rows` x `features` of a host batch are staged ahead.
    static bool pays(std::int64_t rows, std::int64_t features) {
        return rows * features * static_cast<std::int64_t>(sizeof(T)) >= kStagingBytes;
    }

    // update(k, slice k as a device batch) for the consecutive slices of
    // `batch_size` rows of the host `batch`, in order, slice k ordered on
    // `engine_stream` after its transfer; the copy stream drained on the way
    // out (an update's failure included).
    void run(const BatchInput& batch, std::int64_t batch_size, cudaStream_t engine_stream,
             const std::function<void(std::int64_t, const BatchInput&)>& update);

    // The device bytes it holds (the pinned ring is the process's, lent per call).
    std::int64_t bytes() const noexcept;
    // Room for slices of `values` values (rows x (features + 1 + weighted)) in
    // each device buffer, and a pinned ring lent for the next run(); throws
    // Failure (out of memory) and keeps what it had.
    void reserve(std::int64_t values);

private:
    struct RingLease;
    void release() noexcept;

    int device_;
    cudaStream_t copy_stream_ = nullptr;
    cudaEvent_t arrived_[2] = {nullptr, nullptr};   // buffer b's transfers done (copy stream)
    cudaEvent_t released_[2] = {nullptr, nullptr};  // buffer b's update done (engine stream)
    cudaEvent_t chunk_read_[kStagingChunks] = {};   // chunk s's last transfer done (copy stream)
    DeviceArray<T> device_buffers_[2];
    std::unique_ptr<RingLease> ring_;  // from reserve() to the end of run()
};

}  // namespace rh::cuda

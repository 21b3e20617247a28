#include "host_staging.cuh"

#include <algorithm>
#include <iterator>
#include <memory>
#include <thread>
#include <vector>

#include "reuse_pool.hpp"
#include "staging_schedule.hpp"

namespace rh::cuda {

namespace {

// The host threads that copy a chunk into pinned memory: a quarter of the
// cores, 1 to 4 (memory bandwidth, not cores, bounds a copy).
int copy_threads() {
    const int cores = static_cast<int>(std::thread::hardware_concurrency());
    return std::clamp(cores / 4, 1, 4);
}

// kStagingChunks pinned chunks in one allocation (portable: any device may read them).
class PinnedRing {
public:
    PinnedRing() {
        RH_CUDA_CHECK(cudaHostAlloc(reinterpret_cast<void**>(&bytes_), kStagingChunks * kStagingChunkBytes,
                                    cudaHostAllocPortable));
    }
    ~PinnedRing() { cudaFreeHost(bytes_); }
    PinnedRing(const PinnedRing&) = delete;
    PinnedRing& operator=(const PinnedRing&) = delete;
    std::vector<unsigned char*> slots() const {
        std::vector<unsigned char*> out;
        for (int s = 0; s < kStagingChunks; ++s) out.push_back(bytes_ + static_cast<std::size_t>(s) * kStagingChunkBytes);
        return out;
    }

private:
    unsigned char* bytes_ = nullptr;
};

// The process's rings, kept for its lifetime (never destroyed: freeing
// pinned memory after the CUDA runtime has shut down at exit is an error).
ReusePool<PinnedRing>& pinned_rings() {
    static auto* pool = new ReusePool<PinnedRing>();
    return *pool;
}

// stage_slices' device (staging_schedule.hpp): the CUDA runtime's streams and events.
struct CudaStagingDevice {
    using Stream = cudaStream_t;
    using Event = cudaEvent_t;
    int device;
    void record(Event event, Stream stream) { RH_CUDA_CHECK(cudaEventRecord(event, stream)); }
    void wait(Stream stream, Event event) { RH_CUDA_CHECK(cudaStreamWaitEvent(stream, event, 0)); }
    void copy(unsigned char* destination, const unsigned char* source, std::size_t bytes, Stream stream) {
        RH_CUDA_CHECK(cudaMemcpyAsync(destination, source, bytes, cudaMemcpyHostToDevice, stream));
    }
    void synchronize(Event event) { RH_CUDA_CHECK(cudaEventSynchronize(event)); }
    void synchronize(Stream stream) { RH_CUDA_CHECK(cudaStreamSynchronize(stream)); }
    void synchronize_quietly(Stream stream) noexcept {
        cudaStreamSynchronize(stream);
        cudaGetLastError();  // (a failure is the run's own error, already on its way)
    }
    void select() { RH_CUDA_CHECK(cudaSetDevice(device)); }  // the runtime's device is per thread
};

}  // namespace

template <class T>
struct HostStaging<T>::RingLease {
    ReusePool<PinnedRing>::Lease lease;
};

template <class T>
HostStaging<T>::HostStaging(int device) : device_(device) {
    DeviceGuard guard(device_);
    try {
        RH_CUDA_CHECK(cudaStreamCreateWithFlags(&copy_stream_, cudaStreamNonBlocking));
        for (int b = 0; b < 2; ++b) {
            RH_CUDA_CHECK(cudaEventCreateWithFlags(&arrived_[b], cudaEventDisableTiming));
            RH_CUDA_CHECK(cudaEventCreateWithFlags(&released_[b], cudaEventDisableTiming));
        }
        // The stager thread waits on these between chunks: blocking, not spinning beside the copier's threads.
        for (cudaEvent_t& event : chunk_read_)
            RH_CUDA_CHECK(cudaEventCreateWithFlags(&event, cudaEventDisableTiming | cudaEventBlockingSync));
    } catch (...) {  // what was made goes (the destructor does not run)
        release();
        throw;
    }
}

template <class T>
HostStaging<T>::~HostStaging() {
    DeviceGuard guard(device_);
    release();
}

template <class T>
void HostStaging<T>::release() noexcept {
    if (copy_stream_ != nullptr) {
        cudaStreamSynchronize(copy_stream_);
        cudaStreamDestroy(copy_stream_);
        copy_stream_ = nullptr;
    }
    for (int b = 0; b < 2; ++b) {
        if (arrived_[b] != nullptr) cudaEventDestroy(arrived_[b]);
        if (released_[b] != nullptr) cudaEventDestroy(released_[b]);
        arrived_[b] = released_[b] = nullptr;
    }
    for (cudaEvent_t& event : chunk_read_) {
        if (event != nullptr) cudaEventDestroy(event);
        event = nullptr;
    }
    cudaGetLastError();
}

template <class T>
void HostStaging<T>::reserve(std::int64_t values) {
    for (int b = 0; b < 2; ++b) device_buffers_[b].reserve(device_, values);
    if (!ring_)
        ring_ = std::make_unique<RingLease>(
            RingLease{pinned_rings().acquire([] { return std::make_unique<PinnedRing>(); })});
}

template <class T>
std::int64_t HostStaging<T>::bytes() const noexcept {
    return device_buffers_[0].bytes() + device_buffers_[1].bytes();
}

template <class T>
void HostStaging<T>::run(const BatchInput& batch, std::int64_t batch_size, cudaStream_t engine_stream,
                         const std::function<void(std::int64_t, const BatchInput&)>& update) {
    const std::int64_t p = batch.features;
    const std::int64_t slices = 1 + (batch.rows - 1) / batch_size;
    const bool weighted = batch.sample_weight != nullptr;
    const std::int64_t columns = p + 1 + (weighted ? 1 : 0);  // X's row, y, w: a buffer holds [X | y | w]
    DeviceGuard guard(device_);
    reserve(std::min(batch_size, batch.rows) * columns);
    struct GiveBack {  // the ring back to the process's pool, after the copy stream is drained (below)
        std::unique_ptr<RingLease>& ring;
        ~GiveBack() { ring.reset(); }
    } give_back{ring_};
    const auto* X = static_cast<const T*>(batch.X);
    const auto* y = static_cast<const T*>(batch.y);
    const auto* w = static_cast<const T*>(batch.sample_weight);
    auto rows_of = [&](std::int64_t k) { return std::min(batch_size, batch.rows - k * batch_size); };
    // Slice k's host spans in its device buffer's order: [X | y | w].
    auto sources_of = [&](std::int64_t k) {
        const std::int64_t first = k * batch_size, rows = rows_of(k);
        std::vector<CopySpan> out{{nullptr, X + first * p, sizeof(T) * rows * p},
                                  {nullptr, y + first, sizeof(T) * rows}};
        if (weighted) out.push_back({nullptr, w + first, sizeof(T) * rows});
        return out;
    };
    auto update_slice = [&](std::int64_t k, int b) {
        const std::int64_t rows = rows_of(k);
        BatchInput slice = batch;
        slice.memory = BatchMemory::device;
        slice.rows = rows;
        slice.X = device_buffers_[b].data();
        slice.y = device_buffers_[b].data() + rows * p;
        slice.sample_weight = weighted ? device_buffers_[b].data() + rows * (p + 1) : nullptr;
        slice.producer_stream = 0;  // ordered by the arrival event
        slice.engine_owned = true;  // its reuse is ordered by the released event
        update(k, slice);
    };
    StagingResources<CudaStagingDevice> resources;
    resources.engine_stream = engine_stream;
    resources.copy_stream = copy_stream_;
    for (int b = 0; b < 2; ++b) {
        resources.arrived[b] = arrived_[b];
        resources.released[b] = released_[b];
        resources.buffers[b] = reinterpret_cast<unsigned char*>(device_buffers_[b].data());
    }
    resources.chunk_read.assign(std::begin(chunk_read_), std::end(chunk_read_));
    resources.slots = ring_->lease->slots();
    resources.chunk_bytes = kStagingChunkBytes;
    CudaStagingDevice device{device_};
    stage_slices(device, resources, slices, copy_threads(), sources_of, update_slice);
}

template class HostStaging<float>;
template class HostStaging<double>;

}  // namespace rh::cuda

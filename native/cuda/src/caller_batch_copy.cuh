// A caller's device batch copied into the engine's own row buffers while the
// solve reads the caller's arrays (update.cu). The caller may reuse or free
// its arrays once the update returns, so an update that read them in its
// closing waited for the whole stream; with the copy, the closing and the
// meat's closing read the engine's rows, and the update returns once the
// solve's passes and the copy are done, the closings still running (as a
// host batch's do). The copy runs on a stream of its own, after everything
// the engine's stream had queued (the producer's writes included), beside
// the solve's first passes; the engine's stream waits for it before the
// closing. One stream and two events, made on the engine's device at the
// first copy.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "batch.cuh"
#include "engine_internal.cuh"

namespace rh::cuda {

// The largest X (in bytes) an update copies: past it the copy's device
// memory (a second X) weighs more than the closing's wait it saves, which
// shrinks against the solve's own time as the batch grows.
inline constexpr std::int64_t kCallerCopyMaxBytes = std::int64_t{128} << 20;

template <class T>
class CallerBatchCopy {
public:
    CallerBatchCopy() = default;
    CallerBatchCopy(const CallerBatchCopy&) = delete;
    CallerBatchCopy& operator=(const CallerBatchCopy&) = delete;
    ~CallerBatchCopy() {
        if (stream_ == nullptr && ready_ == nullptr && copied_ == nullptr) return;  // never made
        try {
            DeviceGuard guard(device_);  // made on the engine's device, destroyed there
            settle();
            if (copied_ != nullptr) cudaEventDestroy(copied_);
            if (ready_ != nullptr) cudaEventDestroy(ready_);
            if (stream_ != nullptr) cudaStreamDestroy(stream_);
        } catch (...) {  // a broken device: nothing more to give back
        }
    }

    // Whether a batch of `rows` x `p` is copied (kCallerCopyMaxBytes).
    static bool worth(std::int64_t rows, std::int64_t p) {
        return rows * p * static_cast<std::int64_t>(sizeof(T)) <= kCallerCopyMaxBytes;
    }

    // Starts copying `caller` (device memory) into X, y and, when the batch
    // is weighted, w (the engine's rows, at least as long): on the copy's
    // stream, after what `main` has queued. The batch the closings read:
    // the copies, the unit weights where the batch has none.
    StagedBatch<T> start(cudaStream_t main, const StagedBatch<T>& caller, std::int64_t p, T* X, T* y, T* w) {
        make();
        RH_CUDA_CHECK(cudaEventRecord(ready_, main));
        RH_CUDA_CHECK(cudaStreamWaitEvent(stream_, ready_, 0));
        in_flight_ = true;  // from here an exit waits for the copy (settle)
        const std::int64_t n = caller.rows;
        RH_CUDA_CHECK(cudaMemcpyAsync(X, caller.X, sizeof(T) * n * p, cudaMemcpyDeviceToDevice, stream_));
        RH_CUDA_CHECK(cudaMemcpyAsync(y, caller.y, sizeof(T) * n, cudaMemcpyDeviceToDevice, stream_));
        if (caller.weighted)
            RH_CUDA_CHECK(cudaMemcpyAsync(w, caller.w, sizeof(T) * n, cudaMemcpyDeviceToDevice, stream_));
        RH_CUDA_CHECK(cudaEventRecord(copied_, stream_));
        StagedBatch<T> copy = caller;
        copy.X = X;
        copy.y = y;
        if (caller.weighted) copy.w = w;
        return copy;
    }

    // `main` waits for the copy: what it queues from here may read the
    // copy, and a point marked on it after this is past the copy too.
    void join(cudaStream_t main) { RH_CUDA_CHECK(cudaStreamWaitEvent(main, copied_, 0)); }

    // The host waited for a point of `main` after join(): the copy is done.
    void joined_and_waited() { in_flight_ = false; }

    // Waits until the copy no longer reads the caller's arrays (every exit
    // of an update that started one; nothing when none is in flight): the
    // copy's whole stream, not its event, which an enqueue that failed
    // half-way left unrecorded. Throws nothing: a broken device leaves its
    // error to the next call.
    void settle() noexcept {
        if (!in_flight_) return;
        in_flight_ = false;
        if (cudaStreamSynchronize(stream_) != cudaSuccess) cudaGetLastError();
    }

private:
    // Whichever of the three a failed first try left unmade, on the current
    // device (the engine's: update() holds its DeviceGuard).
    void make() {
        RH_CUDA_CHECK(cudaGetDevice(&device_));
        if (stream_ == nullptr) RH_CUDA_CHECK(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
        if (ready_ == nullptr) RH_CUDA_CHECK(cudaEventCreateWithFlags(&ready_, cudaEventDisableTiming));
        if (copied_ == nullptr) RH_CUDA_CHECK(cudaEventCreateWithFlags(&copied_, cudaEventDisableTiming));
    }

    int device_ = 0;
    cudaStream_t stream_ = nullptr;
    cudaEvent_t ready_ = nullptr, copied_ = nullptr;
    bool in_flight_ = false;
};

// Settles `copy` when the update's scope ends, on every exit (a failed one too).
template <class T>
class SettleOnExit {
public:
    explicit SettleOnExit(CallerBatchCopy<T>& copy) : copy_(copy) {}
    SettleOnExit(const SettleOnExit&) = delete;
    SettleOnExit& operator=(const SettleOnExit&) = delete;
    ~SettleOnExit() { copy_.settle(); }

private:
    CallerBatchCopy<T>& copy_;
};

}  // namespace rh::cuda

// A point in the engine's stream the host may have to wait for: the host
// route's update returns without waiting for its closing (update.cu), whose
// kernels still read the pinned buffers the host writes (the pass exchange)
// and the row buffers an update may regrow, so the next update (and a host
// prediction) waits for this point before it touches them. One CUDA event,
// made on the engine's device, destroyed once.
#pragma once

#include <cuda_runtime.h>

#include "engine_internal.cuh"

namespace rh::cuda {

class StreamPoint {
public:
    StreamPoint() = default;
    StreamPoint(const StreamPoint&) = delete;
    StreamPoint& operator=(const StreamPoint&) = delete;
    ~StreamPoint() {
        if (event_ != nullptr) cudaEventDestroy(event_);
    }

    // Made on the current device (before the first mark).
    void make() { RH_CUDA_CHECK(cudaEventCreateWithFlags(&event_, cudaEventDisableTiming)); }

    // The point after everything enqueued on `stream` so far. Throws
    // nothing (it runs on every exit of an update, failed ones too): when
    // the event cannot be recorded (a broken device), the point is left
    // unmarked and the next call meets the device's error itself.
    void mark(cudaStream_t stream) noexcept {
        marked_ = event_ != nullptr && cudaEventRecord(event_, stream) == cudaSuccess;
        if (!marked_) cudaGetLastError();
    }

    // Waits until the device has passed the marked point; true when that
    // took a wait (the device had not passed it yet), false when it had or
    // nothing is marked. An asynchronous fault before the point throws here.
    bool wait_if_ahead() {
        if (!marked_) return false;
        marked_ = false;
        const cudaError_t state = cudaEventQuery(event_);
        if (state == cudaSuccess) return false;
        if (state != cudaErrorNotReady) RH_CUDA_CHECK(state);
        cudaGetLastError();  // "not ready" is no error: nothing of it may reach the next launch's check
        RH_CUDA_CHECK(cudaEventSynchronize(event_));
        return true;
    }

    cudaEvent_t event() const { return event_; }

private:
    cudaEvent_t event_ = nullptr;
    bool marked_ = false;
};

// Marks `point` after everything enqueued on `stream` when it leaves scope,
// unless the scope said the stream was drained after its last work (then
// there is nothing to wait for, and the next call's count of
// synchronizations does not depend on when the device reaches a mark).
class MarkOnExit {
public:
    MarkOnExit(StreamPoint& point, cudaStream_t stream) : point_(point), stream_(stream) {}
    MarkOnExit(const MarkOnExit&) = delete;
    MarkOnExit& operator=(const MarkOnExit&) = delete;
    ~MarkOnExit() {
        if (!drained_) point_.mark(stream_);
    }
    void drained() { drained_ = true; }

private:
    StreamPoint& point_;
    cudaStream_t stream_;
    bool drained_ = false;
};

}  // namespace rh::cuda

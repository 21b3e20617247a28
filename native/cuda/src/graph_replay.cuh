// One repeated launch sequence of a batch (a Newton iteration's launches up
// to its flags copy, a LAMM pass's) as a CUDA graph, behind cuda_graphs=True.
//
// A batch's first run of a sequence launches plainly (cuBLAS and cuSOLVER
// allocate what they need lazily, which a capture may not; a sequence run
// once a batch gains nothing from a capture), the second is captured, every
// later one replays. A sequence whose launch arguments depend only on its
// GraphKey (a Newton direction on the narrow route: the batch's own values,
// which change from batch to batch, are read from device memory,
// batch_constants.cuh) goes on replaying that capture in every later batch
// of the same key, from the batch's first run; any other sequence's
// arguments (tau, h, the surrogate terms, row counts, the batch's device
// pointers) are fixed within a batch only, so it starts again each batch. A
// capture updates the instantiated graph in place (cudaGraphExecUpdate) when
// its topology is unchanged.
//
// When a capture is impossible (an API that refuses stream capture, an
// instantiation error), the sequence runs plainly and a fallback is counted;
// the slot then stays plain for the engine's life (the reason does not go
// away with the next batch). Results are the same either way: a graph runs
// the same kernels in the same order on the same stream.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>
#include <optional>

#include "engine_internal.cuh"

namespace rh::cuda {

// What a reusable sequence's launch arguments depend on besides the values
// the device holds: the batch's rows (grid sizes, row counts) and the
// workspace's layout (its buffers' addresses; Workspace::allocations counts
// every placement). Equal keys, equal arguments.
struct GraphKey {
    std::int64_t rows = -1, layout = -1;
    bool operator==(const GraphKey&) const = default;
};

// Enqueues `work` (launches only) on `stream` under capture: into `target`
// when given (a conditional node's body, cudaStreamBeginCaptureToGraph;
// *out is then `target` again), else into a new graph returned in *out.
// False when the capture failed (the error cleared); a call in `work` that
// refuses capture reports an error, which voids the capture.
template <class Work>
bool capture_launches(cudaStream_t stream, cudaGraph_t target, Work& work, cudaGraph_t* out) {
#if CUDART_VERSION >= 12030
    const cudaError_t begun =
        target != nullptr
            ? cudaStreamBeginCaptureToGraph(stream, target, nullptr, nullptr, 0, cudaStreamCaptureModeThreadLocal)
            : cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal);
#else  // capture into a given graph came with CUDA 12.3
    if (target != nullptr) return false;
    const cudaError_t begun = cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal);
#endif
    if (begun != cudaSuccess) {
        cudaGetLastError();
        return false;
    }
    bool enqueued = true;
    try {
        work();
    } catch (...) {
        enqueued = false;
    }
    cudaGraph_t graph = nullptr;
    const cudaError_t ended = cudaStreamEndCapture(stream, &graph);
    *out = graph;
    const bool ok = enqueued && ended == cudaSuccess && graph != nullptr;
    if (!ok) cudaGetLastError();
    return ok;
}

class GraphReplay {
public:
    GraphReplay() = default;
    GraphReplay(const GraphReplay&) = delete;
    GraphReplay& operator=(const GraphReplay&) = delete;
    ~GraphReplay();

    // A new batch. With a key (a sequence whose arguments depend on nothing
    // else), the last capture serves it when it was made under the same key;
    // without one, the last capture's arguments are stale.
    void new_batch(std::optional<GraphKey> key = std::nullopt) {
        runs_this_batch_ = 0;
        key_ = key;
        captured_this_batch_ = key.has_value() && exec_ != nullptr && captured_key_ == key;
    }

    // Enqueues `work` (launches only: no synchronization, no host reads) on
    // `stream`, plainly, by capture, or by replay.
    template <class Work>
    void run(cudaStream_t stream, Work&& work) {
        ++runs_this_batch_;
        if (disabled_ || (runs_this_batch_ == 1 && !captured_this_batch_)) {  // a batch's first run: plainly
            work();
            return;
        }
        if (captured_this_batch_) {
            RH_CUDA_CHECK(cudaGraphLaunch(exec_, stream));
            ++replays_;
            return;
        }
        if (!capture(stream, work)) {
            disabled_ = true;
            ++fallbacks_;
            work();
            return;
        }
        captured_this_batch_ = true;
        captured_key_ = key_;
        ++captures_;
        RH_CUDA_CHECK(cudaGraphLaunch(exec_, stream));
    }

    std::int64_t captures() const { return captures_; }
    std::int64_t replays() const { return replays_; }
    std::int64_t fallbacks() const { return fallbacks_; }

private:
    template <class Work>
    bool capture(cudaStream_t stream, Work& work) {
        cudaGraph_t graph = nullptr;
        const bool ok = capture_launches(stream, nullptr, work, &graph) && instantiate(graph);
        if (graph != nullptr) cudaGraphDestroy(graph);
        if (!ok) cudaGetLastError();  // clear the (non-sticky) error the failed capture left
        return ok;
    }
    bool instantiate(cudaGraph_t graph);

    cudaGraphExec_t exec_ = nullptr;
    std::optional<GraphKey> key_, captured_key_;  // this batch's; the one the exec was captured under
    int runs_this_batch_ = 0;
    bool captured_this_batch_ = false, disabled_ = false;
    std::int64_t captures_ = 0, replays_ = 0, fallbacks_ = 0;
};

}  // namespace rh::cuda

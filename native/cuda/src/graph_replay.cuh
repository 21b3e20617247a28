// One repeated launch sequence of a batch (a Newton iteration's launches up
// to its flags copy, a LAMM pass's) as a CUDA graph, behind cuda_graphs=True.
//
// Kernel arguments (tau, h, the surrogate terms, row counts, the batch's
// device pointers) are fixed within a batch and change between batches, so
// a sequence is captured anew in every batch: the first run of the batch
// launches plainly (cuBLAS and cuSOLVER allocate what they need lazily, which
// a capture may not), the second is captured and launched, every later one
// replays the graph. A re-capture updates the instantiated graph in place
// (cudaGraphExecUpdate) when its topology is unchanged.
//
// When a capture is impossible (an API that refuses stream capture, an
// instantiation error), the sequence runs plainly and a fallback is counted;
// the slot then stays plain for the engine's life (the reason does not go
// away with the next batch). Results are the same either way: a graph runs
// the same kernels in the same order on the same stream.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "engine_internal.cuh"

namespace rh::cuda {

class GraphReplay {
public:
    GraphReplay() = default;
    GraphReplay(const GraphReplay&) = delete;
    GraphReplay& operator=(const GraphReplay&) = delete;
    ~GraphReplay();

    // A new batch: the last capture's arguments are stale.
    void new_batch() {
        runs_this_batch_ = 0;
        captured_this_batch_ = false;
    }

    // Enqueues `work` (launches only: no synchronization, no host reads) on
    // `stream`, plainly, by capture, or by replay.
    template <class Work>
    void run(cudaStream_t stream, Work&& work) {
        ++runs_this_batch_;
        if (disabled_ || runs_this_batch_ == 1) {
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
        ++captures_;
        RH_CUDA_CHECK(cudaGraphLaunch(exec_, stream));
    }

    std::int64_t captures() const { return captures_; }
    std::int64_t replays() const { return replays_; }
    std::int64_t fallbacks() const { return fallbacks_; }

private:
    template <class Work>
    bool capture(cudaStream_t stream, Work& work) {
        if (cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal) != cudaSuccess) {
            cudaGetLastError();
            return false;
        }
        bool enqueued = true;
        try {
            work();
        } catch (...) {  // a call that refuses capture reports an error: the capture is void
            enqueued = false;
        }
        cudaGraph_t graph = nullptr;
        const cudaError_t ended = cudaStreamEndCapture(stream, &graph);
        const bool ok = enqueued && ended == cudaSuccess && graph != nullptr && instantiate(graph);
        if (graph != nullptr) cudaGraphDestroy(graph);
        if (!ok) cudaGetLastError();  // clear the (non-sticky) error the failed capture left
        return ok;
    }
    bool instantiate(cudaGraph_t graph);

    cudaGraphExec_t exec_ = nullptr;
    int runs_this_batch_ = 0;
    bool captured_this_batch_ = false, disabled_ = false;
    std::int64_t captures_ = 0, replays_ = 0, fallbacks_ = 0;
};

}  // namespace rh::cuda

// The device-driven Newton solve's loop (device_driven_solve.cu) as one CUDA
// graph: a while node whose body is one direction's launches and the replay
// of core's driver after it (newton_replay.cuh), which sets the node's
// condition. Made once for a GraphKey (the body's launch arguments depend
// on nothing else: the batch's values are read from device memory,
// batch_constants.cuh) and launched by every batch of that key; a batch of
// another key makes it again. Where the driver or the runtime cannot make
// it (conditional nodes came with CUDA 12.3), the loop is off for the
// engine's life and the host-driven route serves (a fallback counted).
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "engine_internal.cuh"
#include "graph_replay.cuh"
#include "newton_replay.cuh"

namespace rh::cuda {

class NewtonLoopGraph {
public:
    NewtonLoopGraph() = default;
    NewtonLoopGraph(const NewtonLoopGraph&) = delete;
    NewtonLoopGraph& operator=(const NewtonLoopGraph&) = delete;
    ~NewtonLoopGraph() { release(); }

    bool usable() const { return !disabled_; }

    // Enqueues the loop on `stream`: the graph made under `key`, or a new
    // one whose body `iteration(handle)` enqueues (launches only; the last
    // of them sets `handle`, the while condition, on the device). False
    // when no graph could be made: nothing was enqueued.
    template <class Iteration>
    bool run(cudaStream_t stream, const GraphKey& key, Iteration&& iteration) {
        if (disabled_) return false;
        if (exec_ == nullptr || !(key_ == key)) {
            if (!build(stream, iteration)) {
                disabled_ = true;
                ++fallbacks_;
                return false;
            }
            key_ = key;
            ++captures_;
        } else {
            ++replays_;
        }
        RH_CUDA_CHECK(cudaGraphLaunch(exec_, stream));
        return true;
    }

    std::int64_t captures() const { return captures_; }
    std::int64_t replays() const { return replays_; }
    std::int64_t fallbacks() const { return fallbacks_; }

private:
    template <class Iteration>
    bool build(cudaStream_t stream, Iteration& iteration) {
        release();
        cudaGraph_t graph = nullptr, body = nullptr;
        LoopCondition handle{};
        bool ok = while_node(graph, body, handle);
        if (ok) {
            auto work = [&] { iteration(handle); };
            cudaGraph_t captured = nullptr;  // the body again
            ok = capture_launches(stream, body, work, &captured);
        }
        if (ok) ok = cudaGraphInstantiate(&exec_, graph, 0) == cudaSuccess;
        if (!ok) {
            exec_ = nullptr;
            cudaGetLastError();
        }
        if (graph != nullptr) cudaGraphDestroy(graph);  // its body with it
        return ok;
    }
    // A new graph of one while node (its condition 1 at every launch) and
    // the node's body graph, owned by the graph.
    static bool while_node(cudaGraph_t& graph, cudaGraph_t& body, LoopCondition& handle);
    void release();

    cudaGraphExec_t exec_ = nullptr;
    GraphKey key_;
    bool disabled_ = false;
    std::int64_t captures_ = 0, replays_ = 0, fallbacks_ = 0;
};

}  // namespace rh::cuda

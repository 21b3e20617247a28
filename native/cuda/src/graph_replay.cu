#include "graph_replay.cuh"

namespace rh::cuda {

GraphReplay::~GraphReplay() {
    if (exec_ != nullptr) cudaGraphExecDestroy(exec_);
}

bool GraphReplay::instantiate(cudaGraph_t graph) {
    if (exec_ != nullptr) {
        cudaGraphExecUpdateResultInfo result;
        if (cudaGraphExecUpdate(exec_, graph, &result) == cudaSuccess) return true;
        cudaGetLastError();
        cudaGraphExecDestroy(exec_);
        exec_ = nullptr;
    }
    if (cudaGraphInstantiate(&exec_, graph, 0) != cudaSuccess) {
        exec_ = nullptr;
        return false;
    }
    return true;
}

}  // namespace rh::cuda

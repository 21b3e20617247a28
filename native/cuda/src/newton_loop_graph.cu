#include "newton_loop_graph.cuh"

namespace rh::cuda {

bool NewtonLoopGraph::while_node(cudaGraph_t& graph, cudaGraph_t& body, LoopCondition& handle) {
#if CUDART_VERSION >= 12030
    if (cudaGraphCreate(&graph, 0) != cudaSuccess) {
        graph = nullptr;
        return false;
    }
    if (cudaGraphConditionalHandleCreate(&handle, graph, 1, cudaGraphCondAssignDefault) != cudaSuccess) return false;
    cudaGraphNodeParams params{};
    params.type = cudaGraphNodeTypeConditional;
    params.conditional.handle = handle;
    params.conditional.type = cudaGraphCondTypeWhile;
    params.conditional.size = 1;
    cudaGraphNode_t node = nullptr;
#if CUDART_VERSION >= 13000
    const cudaError_t added = cudaGraphAddNode(&node, graph, nullptr, nullptr, 0, &params);
#else  // CUDA 12.3-12.9: the form with edge data is _v2
    const cudaError_t added = cudaGraphAddNode_v2(&node, graph, nullptr, nullptr, 0, &params);
#endif
    if (added != cudaSuccess) return false;
    body = params.conditional.phGraph_out[0];
    return body != nullptr;
#else  // no conditional nodes before CUDA 12.3: the host-driven route serves
    (void)graph;
    (void)body;
    (void)handle;
    return false;
#endif
}

void NewtonLoopGraph::release() {
    if (exec_ != nullptr) cudaGraphExecDestroy(exec_);
    exec_ = nullptr;
}

}  // namespace rh::cuda

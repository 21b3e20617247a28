// The CUDA engine's own vocabulary, in core terms: what an engine is made
// for, where a batch lives and what it holds, the state that crosses to the
// host, what an update reports and what an engine tells about itself. The
// C ABI's structs (rh_cuda.h) are translated to and from these in c_api.cu
// alone; nothing inside the engine sees an ABI struct.
#pragma once

#include <cstdint>

#include "core/diagnostics.hpp"
#include "core/state_view.hpp"

namespace rh::cuda {

enum class ElementType { float32, float64 };

template <class T>
constexpr ElementType element_type_of() {
    return sizeof(T) == 8 ? ElementType::float64 : ElementType::float32;
}

// Which path may solve an update: the block solver for the small batches it
// serves well and the pipeline for the rest, always the pipeline, or the
// block solver whenever the parameters fit its arrays.
enum class SolverChoice { automatic, pipeline, block };

// How an update was solved.
enum class SolverPath { pipeline, block, block_then_pipeline };

struct EngineOptions {
    int device = 0;
    ElementType dtype = ElementType::float64;
    std::int64_t n_features = 0;
    bool fit_intercept = true;
    bool cuda_graphs = false;  // capture the repeated launch sequences (falls back when impossible)
    bool fast_math = false;    // float32 only: TF32 tensor-core math in cuBLAS
    SolverChoice solver_choice = SolverChoice::automatic;
    int block_tiles = 0;             // tiles of rows per block of the block solver at least; 0: the default
    std::uint64_t stream = 0;        // 0: the engine creates its own stream; else a borrowed cudaStream_t
};

// The most tiles of rows per block an engine may be asked for.
inline constexpr int kMaxBlockTiles = 4096;

enum class BatchMemory { host, device };

// One batch as the caller hands it: X (rows x features, row-major), y and
// optional frequency weights, all of the engine's dtype, on the host or on
// the engine's device (then read in place once the engine's stream waited
// for the producer's stream, when one is given).
struct BatchInput {
    BatchMemory memory = BatchMemory::host;
    ElementType dtype = ElementType::float64;
    std::int64_t rows = 0;
    std::int64_t features = 0;
    const void* X = nullptr;
    const void* y = nullptr;
    const void* sample_weight = nullptr;  // null: unit weights
    std::uint64_t producer_stream = 0;    // a cudaStream_t, or 0
    bool engine_owned = false;            // device memory the engine owns (update_batches' staging)
};

// The state on the host: d coefficients, the d x d information and, when
// given, the d x d meat, with the counters.
struct HostState {
    void* coefficients = nullptr;
    void* information = nullptr;
    void* meat = nullptr;  // null: no meat given (restore) or asked for (copy)
    std::int64_t n_parameters = 0;
    core::StateCounters counters;
};

// What an update reports: the contract's diagnostics and the engine's own.
struct UpdateReport {
    core::UpdateDiagnostics diagnostics;
    int host_syncs = 0;  // host synchronizations of this update
    SolverPath solver_path = SolverPath::pipeline;
};

struct EngineFeatures {
    int device = 0;
    ElementType dtype = ElementType::float64;
    std::int64_t n_parameters = 0;
    std::int64_t updates = 0;
    std::int64_t host_syncs = 0;             // over the engine's life
    std::int64_t workspace_allocations = 0;  // device allocations (constant in steady state)
    std::int64_t workspace_bytes = 0;
    std::int64_t graph_captures = 0, graph_replays = 0, graph_fallbacks = 0;
    bool cuda_graphs = false, fast_math = false, owns_stream = false;
    std::uint64_t stream = 0;
};

}  // namespace rh::cuda

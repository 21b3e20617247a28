#include "abi_conversions.hpp"

#include <cstddef>

#include "core/status.hpp"

namespace rh::cuda::abi {

namespace {

ElementType element_type(int32_t dtype, const char* message) {
    if (dtype == RH_CUDA_FLOAT64) return ElementType::float64;
    if (dtype == RH_CUDA_FLOAT32) return ElementType::float32;
    throw core::EngineError(core::Status::invalid_argument, message);
}

int32_t abi_dtype(ElementType dtype) {
    return dtype == ElementType::float64 ? RH_CUDA_FLOAT64 : RH_CUDA_FLOAT32;
}

}  // namespace

EngineOptions engine_options(const rh_cuda_engine_options& o) {
    EngineOptions out;
    out.device = o.device;
    out.dtype = element_type(o.dtype, "dtype must be either 'float32' or 'float64'");
    out.n_features = o.n_features;
    out.fit_intercept = o.fit_intercept != 0;
    out.cuda_graphs = o.cuda_graphs != 0;
    out.fast_math = o.fast_math != 0;
    switch (o.solver_choice) {
        case RH_CUDA_SOLVER_AUTO: out.solver_choice = SolverChoice::automatic; break;
        case RH_CUDA_SOLVER_PIPELINE: out.solver_choice = SolverChoice::pipeline; break;
        case RH_CUDA_SOLVER_BLOCK: out.solver_choice = SolverChoice::block; break;
        default:
            throw core::EngineError(
                core::Status::invalid_argument,
                "solver_choice must be RH_CUDA_SOLVER_AUTO, RH_CUDA_SOLVER_PIPELINE or RH_CUDA_SOLVER_BLOCK");
    }
    out.block_tiles = o.block_tiles;
    out.stream = o.stream;
    return out;
}

core::SolverConfig solver_config(const rh_cuda_solver_config& c) {
    core::SolverConfig out;
    out.tau = c.tau;
    if (c.penalty != RH_CUDA_PENALTY_NONE && c.penalty != RH_CUDA_PENALTY_L1)
        throw core::EngineError(core::Status::invalid_argument, "penalty must be either 'none' or 'l1'");
    out.penalty = c.penalty == RH_CUDA_PENALTY_L1 ? core::Penalty::l1 : core::Penalty::none;
    out.lambda_scale = c.lambda_scale;
    out.bandwidth_scale = c.bandwidth_scale;
    out.fit_intercept = c.fit_intercept != 0;
    out.max_iter = c.max_iter;
    out.tol = c.tol;
    out.ridge = c.ridge;
    return out;
}

BatchInput batch_input(const rh_cuda_batch& b) {
    BatchInput out;
    out.dtype = element_type(b.dtype, "the batch's dtype is not the engine's");
    if (b.memory != RH_CUDA_MEMORY_HOST && b.memory != RH_CUDA_MEMORY_DEVICE)
        throw core::EngineError(core::Status::invalid_argument, "batch memory must be host or device");
    out.memory = b.memory == RH_CUDA_MEMORY_HOST ? BatchMemory::host : BatchMemory::device;
    out.rows = b.rows;
    out.features = b.features;
    out.X = b.X;
    out.y = b.y;
    out.sample_weight = b.sample_weight;
    out.producer_stream = b.stream;
    return out;
}

core::StateCounters state_counters(const rh_cuda_state_counters& c) {
    return {c.n_features_in, c.fit_intercept != 0, c.n_samples_seen, c.batch_count, c.previous_lambda, c.weight_sum};
}

rh_cuda_state_counters abi_counters(const core::StateCounters& c) {
    rh_cuda_state_counters out{};
    stamp(&out);
    out.n_features_in = c.n_features_in;
    out.n_samples_seen = c.n_samples_seen;
    out.batch_count = c.batch_count;
    out.previous_lambda = c.previous_lambda;
    out.weight_sum = c.weight_sum;
    out.fit_intercept = c.fit_intercept ? 1 : 0;
    return out;
}

// The host state's arrays; its meat none in a struct of ABI 1.3's size (before the field existed).
HostState host_state(const rh_cuda_host_state& state) {
    HostState out;
    out.coefficients = state.coefficients;
    out.information = state.information;
    out.meat = state.struct_size >= offsetof(rh_cuda_host_state, meat) + sizeof(void*) ? state.meat : nullptr;
    out.n_parameters = state.n_parameters;
    out.counters = state_counters(state.counters);
    return out;
}

rh_cuda_diagnostics abi_diagnostics(const UpdateReport& report) {
    const core::UpdateDiagnostics& d = report.diagnostics;
    rh_cuda_diagnostics out{};
    stamp(&out);
    out.objective = d.objective;
    out.lambda_value = d.lambda_value;
    out.bandwidth = d.bandwidth;
    out.iterations = d.iterations;
    out.converged = d.converged ? 1 : 0;
    out.stop_reason = static_cast<uint8_t>(d.stop_reason);
    out.solve_route = static_cast<int32_t>(d.solve_route);
    out.cholesky_solves = d.cholesky_solves;
    out.lu_solves = d.lu_solves;
    out.least_squares_solves = d.least_squares_solves;
    out.host_syncs = report.host_syncs;
    switch (report.solver_path) {
        case SolverPath::pipeline: out.solver_path = RH_CUDA_PATH_PIPELINE; break;
        case SolverPath::block: out.solver_path = RH_CUDA_PATH_BLOCK; break;
        case SolverPath::block_then_pipeline: out.solver_path = RH_CUDA_PATH_BLOCK_THEN_PIPELINE; break;
    }
    return out;
}

rh_cuda_features abi_features(const EngineFeatures& f) {
    rh_cuda_features out{};
    stamp(&out);
    out.device = f.device;
    out.dtype = abi_dtype(f.dtype);
    out.n_parameters = f.n_parameters;
    out.updates = f.updates;
    out.host_syncs = f.host_syncs;
    out.workspace_allocations = f.workspace_allocations;
    out.workspace_bytes = f.workspace_bytes;
    out.graph_captures = f.graph_captures;
    out.graph_replays = f.graph_replays;
    out.graph_fallbacks = f.graph_fallbacks;
    out.cuda_graphs = f.cuda_graphs ? 1 : 0;
    out.fast_math = f.fast_math ? 1 : 0;
    out.owns_stream = f.owns_stream ? 1 : 0;
    out.stream = f.stream;
    return out;
}

}  // namespace rh::cuda::abi

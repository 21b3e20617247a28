// The CUDA binding's translations between core's types and the C ABI's
// structs (the engine's diagnostics, the solver configuration, the state
// counters, the runtime's and a device's description): what cuda_module.cpp
// hands the engine and what it returns.
#pragma once

#include <nanobind/nanobind.h>

#include <cstdint>
#include <string>

#include "abi_conversions.hpp"
#include "core/diagnostics.hpp"
#include "core/solver_config.hpp"
#include "core/state_view.hpp"
#include "rh_cuda.hpp"

namespace rh::python {

// The contract's diagnostics and the CUDA engine's own count of host
// synchronizations.
struct CudaUpdateDiagnostics : rh::core::UpdateDiagnostics {
    int host_syncs = 0;
    std::string solver_path = "pipeline";  // "pipeline", "block" or "block_then_pipeline"
};

inline const char* solver_path_name(uint8_t path) {
    if (path == RH_CUDA_PATH_BLOCK) return "block";
    if (path == RH_CUDA_PATH_BLOCK_THEN_PIPELINE) return "block_then_pipeline";
    return "pipeline";
}

inline rh_cuda_solver_config abi_config(const rh::core::SolverConfig& config) {
    auto abi = rh::cuda_abi::make<rh_cuda_solver_config>();
    abi.tau = config.tau;
    abi.lambda_scale = config.lambda_scale;
    abi.bandwidth_scale = config.bandwidth_scale;
    abi.tol = config.tol;
    abi.ridge = config.ridge;
    abi.penalty = config.penalty == rh::core::Penalty::l1 ? RH_CUDA_PENALTY_L1 : RH_CUDA_PENALTY_NONE;
    abi.max_iter = config.max_iter;
    abi.fit_intercept = config.fit_intercept ? 1 : 0;
    return abi;
}

inline CudaUpdateDiagnostics diagnostics_of(const rh_cuda_diagnostics& result) {
    CudaUpdateDiagnostics diagnostics;
    diagnostics.iterations = result.iterations;
    diagnostics.converged = result.converged != 0;
    diagnostics.stop_reason = static_cast<rh::core::StopReason>(result.stop_reason);
    diagnostics.objective = result.objective;
    diagnostics.lambda_value = result.lambda_value;
    diagnostics.bandwidth = result.bandwidth;
    diagnostics.solve_route = static_cast<rh::core::SolveRoute>(result.solve_route);
    diagnostics.cholesky_solves = result.cholesky_solves;
    diagnostics.lu_solves = result.lu_solves;
    diagnostics.least_squares_solves = result.least_squares_solves;
    diagnostics.host_syncs = result.host_syncs;
    diagnostics.solver_path = solver_path_name(result.solver_path);
    return diagnostics;
}

// The state counters both ways: the engine's own translations (abi_conversions.cpp).
inline rh_cuda_state_counters to_abi(const rh::core::StateCounters& c) { return rh::cuda::abi::abi_counters(c); }
inline rh::core::StateCounters from_abi(const rh_cuda_state_counters& c) { return rh::cuda::abi::state_counters(c); }

// The runtime's and a device's description, as the module returns them.
inline nanobind::dict runtime_info_dict() {
    const rh_cuda_runtime_info info = rh::cuda_abi::runtime_info();
    nanobind::dict out;
    out["device_count"] = info.device_count;
    out["runtime_version"] = info.runtime_version;
    out["driver_version"] = info.driver_version;
    return out;
}

inline nanobind::dict device_info_dict(int device) {
    const rh_cuda_device_info info = rh::cuda_abi::device_info(device);
    nanobind::dict out;
    out["device"] = info.device;
    out["name"] = std::string(info.name);
    out["compute_capability"] = nanobind::make_tuple(info.compute_capability_major, info.compute_capability_minor);
    out["multiprocessors"] = info.multiprocessors;
    out["total_memory_bytes"] = info.total_memory_bytes;
    return out;
}

}  // namespace rh::python

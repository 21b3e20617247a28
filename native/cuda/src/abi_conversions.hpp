// Every translation between the C ABI's structs (rh_cuda.h) and the engine's
// own types (engine_types.hpp), in plain C++ (no CUDA), so that CTest checks
// each of them on any machine (native/tests/cuda/test_abi_conversions.cpp).
// c_api.cu calls them; no other engine source knows the ABI
// (tests/test_native_layout.py). An enumerator outside the ABI's throws
// core::EngineError (invalid_argument) with the message the entry point
// reports.
#pragma once

#include <cstdint>

#include "core/solver_config.hpp"
#include "core/state_view.hpp"
#include "engine_types.hpp"
#include "rh_cuda.h"

namespace rh::cuda::abi {

// A struct going out: this ABI's version and the struct's size.
template <class S>
void stamp(S* value) {
    value->abi_version = RH_CUDA_ABI_VERSION;
    value->struct_size = sizeof(S);
}

EngineOptions engine_options(const rh_cuda_engine_options& options);
core::SolverConfig solver_config(const rh_cuda_solver_config& config);
BatchInput batch_input(const rh_cuda_batch& batch);
core::StateCounters state_counters(const rh_cuda_state_counters& counters);
rh_cuda_state_counters abi_counters(const core::StateCounters& counters);
// The host state's arrays and counters; its meat none in a struct of ABI
// 1.3's size (before the field existed).
HostState host_state(const rh_cuda_host_state& state);
rh_cuda_diagnostics abi_diagnostics(const UpdateReport& report);
rh_cuda_features abi_features(const EngineFeatures& features);

}  // namespace rh::cuda::abi

// The C ABI's entry points (rh_cuda.h): each checks its structs' version and
// size and its pointers, runs inside one guard that catches every exception
// (no exception crosses the boundary) and turns it into a status code and
// a message (the engine's, or the calling thread's before an engine exists),
// and restores the caller's current device (DeviceGuard, inside the engine).
// Every translation between the ABI's structs and the engine's own types
// (engine_types.cuh) is here.
#include <algorithm>
#include <cstddef>
#include <cstring>
#include <new>
#include <string>

#include "core/diagnostics.hpp"
#include "core/solver_config.hpp"
#include "core/state_view.hpp"
#include "core/status.hpp"
#include "engine_internal.cuh"
#include "rh_cuda.h"

struct rh_cuda_engine_s {
    std::unique_ptr<rh::cuda::Engine> engine;
};

namespace {

static_assert(RH_CUDA_INVALID_ARGUMENT == static_cast<int>(rh::core::Status::invalid_argument));
static_assert(RH_CUDA_NON_FINITE_INPUT == static_cast<int>(rh::core::Status::non_finite_input));
static_assert(RH_CUDA_INVALID_WEIGHTS == static_cast<int>(rh::core::Status::invalid_weights));
static_assert(RH_CUDA_INVALID_STATE == static_cast<int>(rh::core::Status::invalid_state));
static_assert(RH_CUDA_NUMERICAL_FAILURE == static_cast<int>(rh::core::Status::numerical_failure));
static_assert(RH_CUDA_INTERNAL_ERROR == static_cast<int>(rh::core::Status::internal_error));
static_assert(RH_CUDA_OUT_OF_MEMORY == static_cast<int>(rh::core::Status::out_of_memory));
static_assert(RH_CUDA_DEVICE_ERROR == static_cast<int>(rh::core::Status::device_error));
static_assert(RH_CUDA_UNAVAILABLE == static_cast<int>(rh::core::Status::unavailable));
// Routes and stop reasons cross the ABI as the core's enumerators.
static_assert(RH_CUDA_ROUTE_NONE == static_cast<int>(rh::core::SolveRoute::none));
static_assert(RH_CUDA_ROUTE_CHOLESKY == static_cast<int>(rh::core::SolveRoute::cholesky));
static_assert(RH_CUDA_ROUTE_LU == static_cast<int>(rh::core::SolveRoute::lu));
static_assert(RH_CUDA_ROUTE_LEAST_SQUARES == static_cast<int>(rh::core::SolveRoute::least_squares));
static_assert(RH_CUDA_STOP_CONVERGED == static_cast<int>(rh::core::StopReason::converged));
static_assert(RH_CUDA_STOP_MAX_ITER == static_cast<int>(rh::core::StopReason::max_iter));
static_assert(RH_CUDA_STOP_LINE_SEARCH_EXHAUSTED == static_cast<int>(rh::core::StopReason::line_search_exhausted));
static_assert(RH_CUDA_STOP_MAJORIZATION_EXHAUSTED == static_cast<int>(rh::core::StopReason::majorization_exhausted));

// Per thread (as faiss and XGBoost keep theirs): two threads whose calls
// fail at once each read their own message.
thread_local std::string process_error;

void set_process_error(const std::string& message) { process_error = message; }

int32_t copy_message(const std::string& message, char* buffer, uint64_t size, uint64_t* needed) {
    if (needed != nullptr) *needed = message.size() + 1;
    if (buffer != nullptr && size > 0) {
        const uint64_t count = message.size() < size - 1 ? message.size() : size - 1;
        std::memcpy(buffer, message.data(), count);
        buffer[count] = '\0';
    }
    return RH_CUDA_OK;
}

// Runs body(); an exception becomes a status and a message for `report`.
template <class Body, class Report>
int32_t guarded(Body&& body, Report&& report) {
    try {
        body();
        return RH_CUDA_OK;
    } catch (const rh::core::EngineError& error) {
        report(error.what());
        return static_cast<int32_t>(error.status());
    } catch (const std::bad_alloc&) {
        report("out of host memory");
        return RH_CUDA_OUT_OF_MEMORY;
    } catch (const std::exception& error) {
        report(std::string("internal error: ") + error.what());
        return RH_CUDA_INTERNAL_ERROR;
    } catch (...) {
        report("internal error: unknown exception");
        return RH_CUDA_INTERNAL_ERROR;
    }
}

template <class Body>
int32_t process_call(Body&& body) {
    return guarded(body, [](const std::string& message) { set_process_error(message); });
}

template <class Body>
int32_t engine_call(rh_cuda_engine_t handle, Body&& body) {
    if (handle == nullptr || !handle->engine) {
        set_process_error("engine handle must not be null");
        return RH_CUDA_INVALID_ARGUMENT;
    }
    rh::cuda::Engine& engine = *handle->engine;
    return guarded([&] { body(engine); }, [&](const std::string& message) { engine.last_error = message; });
}

// A struct from the caller: non-null, this ABI major, at least this size
// (`minimum`: the size of the struct's first version in this major, for a
// struct that grew: the engine reads the later fields only when given).
template <class S>
void check_struct(const S* value, const char* name, std::size_t minimum = sizeof(S)) {
    if (value == nullptr) throw rh::cuda::Failure(rh::core::Status::invalid_argument, std::string(name) + " must not be null");
    if ((value->abi_version >> 16) != RH_CUDA_ABI_VERSION_MAJOR)
        throw rh::cuda::Failure(rh::core::Status::invalid_argument,
                                std::string(name) + " was built for another ABI major version");
    if (value->struct_size < minimum)
        throw rh::cuda::Failure(rh::core::Status::invalid_argument, std::string(name) + " is smaller than this ABI's");
}

template <class S>
void stamp(S* value) {
    value->abi_version = RH_CUDA_ABI_VERSION;
    value->struct_size = sizeof(S);
}

// ---- the ABI's structs to and from the engine's types (engine_types.cuh):
// the only place that knows both.

rh::cuda::ElementType element_type(int32_t dtype, const char* message) {
    if (dtype == RH_CUDA_FLOAT64) return rh::cuda::ElementType::float64;
    if (dtype == RH_CUDA_FLOAT32) return rh::cuda::ElementType::float32;
    throw rh::cuda::Failure(rh::core::Status::invalid_argument, message);
}

int32_t abi_dtype(rh::cuda::ElementType dtype) {
    return dtype == rh::cuda::ElementType::float64 ? RH_CUDA_FLOAT64 : RH_CUDA_FLOAT32;
}

rh::cuda::EngineOptions engine_options(const rh_cuda_engine_options& o) {
    rh::cuda::EngineOptions out;
    out.device = o.device;
    out.dtype = element_type(o.dtype, "dtype must be either 'float32' or 'float64'");
    out.n_features = o.n_features;
    out.fit_intercept = o.fit_intercept != 0;
    out.cuda_graphs = o.cuda_graphs != 0;
    out.fast_math = o.fast_math != 0;
    switch (o.solver_choice) {
        case RH_CUDA_SOLVER_AUTO: out.solver_choice = rh::cuda::SolverChoice::automatic; break;
        case RH_CUDA_SOLVER_PIPELINE: out.solver_choice = rh::cuda::SolverChoice::pipeline; break;
        case RH_CUDA_SOLVER_BLOCK: out.solver_choice = rh::cuda::SolverChoice::block; break;
        default:
            throw rh::cuda::Failure(
                rh::core::Status::invalid_argument,
                "solver_choice must be RH_CUDA_SOLVER_AUTO, RH_CUDA_SOLVER_PIPELINE or RH_CUDA_SOLVER_BLOCK");
    }
    out.block_tiles = o.block_tiles;
    out.stream = o.stream;
    return out;
}

rh::core::SolverConfig solver_config(const rh_cuda_solver_config& c) {
    rh::core::SolverConfig out;
    out.tau = c.tau;
    if (c.penalty != RH_CUDA_PENALTY_NONE && c.penalty != RH_CUDA_PENALTY_L1)
        throw rh::cuda::Failure(rh::core::Status::invalid_argument, "penalty must be either 'none' or 'l1'");
    out.penalty = c.penalty == RH_CUDA_PENALTY_L1 ? rh::core::Penalty::l1 : rh::core::Penalty::none;
    out.lambda_scale = c.lambda_scale;
    out.bandwidth_scale = c.bandwidth_scale;
    out.fit_intercept = c.fit_intercept != 0;
    out.max_iter = c.max_iter;
    out.tol = c.tol;
    out.ridge = c.ridge;
    return out;
}

rh::cuda::BatchInput batch_input(const rh_cuda_batch& b) {
    rh::cuda::BatchInput out;
    out.dtype = element_type(b.dtype, "the batch's dtype is not the engine's");
    if (b.memory != RH_CUDA_MEMORY_HOST && b.memory != RH_CUDA_MEMORY_DEVICE)
        throw rh::cuda::Failure(rh::core::Status::invalid_argument, "batch memory must be host or device");
    out.memory = b.memory == RH_CUDA_MEMORY_HOST ? rh::cuda::BatchMemory::host : rh::cuda::BatchMemory::device;
    out.rows = b.rows;
    out.features = b.features;
    out.X = b.X;
    out.y = b.y;
    out.sample_weight = b.sample_weight;
    out.producer_stream = b.stream;
    return out;
}

rh::core::StateCounters state_counters(const rh_cuda_state_counters& c) {
    return {c.n_features_in, c.fit_intercept != 0, c.n_samples_seen, c.batch_count, c.previous_lambda, c.weight_sum};
}

rh_cuda_state_counters abi_counters(const rh::core::StateCounters& c) {
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
rh::cuda::HostState host_state(const rh_cuda_host_state& state) {
    rh::cuda::HostState out;
    out.coefficients = state.coefficients;
    out.information = state.information;
    out.meat = state.struct_size >= offsetof(rh_cuda_host_state, meat) + sizeof(void*) ? state.meat : nullptr;
    out.n_parameters = state.n_parameters;
    out.counters = state_counters(state.counters);
    return out;
}

rh_cuda_diagnostics abi_diagnostics(const rh::cuda::UpdateReport& report) {
    const rh::core::UpdateDiagnostics& d = report.diagnostics;
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
        case rh::cuda::SolverPath::pipeline: out.solver_path = RH_CUDA_PATH_PIPELINE; break;
        case rh::cuda::SolverPath::block: out.solver_path = RH_CUDA_PATH_BLOCK; break;
        case rh::cuda::SolverPath::block_then_pipeline: out.solver_path = RH_CUDA_PATH_BLOCK_THEN_PIPELINE; break;
    }
    return out;
}

rh_cuda_features abi_features(const rh::cuda::EngineFeatures& f) {
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

}  // namespace

extern "C" {

uint32_t rh_cuda_abi_version(void) { return RH_CUDA_ABI_VERSION; }

int32_t rh_cuda_get_runtime_info(rh_cuda_runtime_info* info) {
    return process_call([&] {
        check_struct(info, "runtime info");
        int count = 0, runtime = 0, driver = 0;
        if (cudaGetDeviceCount(&count) != cudaSuccess) {
            cudaGetLastError();
            count = 0;
        }
        cudaRuntimeGetVersion(&runtime);
        if (cudaDriverGetVersion(&driver) != cudaSuccess) driver = 0;
        cudaGetLastError();
        info->device_count = count;
        info->runtime_version = runtime;
        info->driver_version = driver;
        stamp(info);
    });
}

int32_t rh_cuda_get_device_info(int32_t device, rh_cuda_device_info* info) {
    return process_call([&] {
        check_struct(info, "device info");
        cudaDeviceProp properties;
        RH_CUDA_CHECK(cudaGetDeviceProperties(&properties, device));
        info->device = device;
        info->compute_capability_major = properties.major;
        info->compute_capability_minor = properties.minor;
        info->multiprocessors = properties.multiProcessorCount;
        info->total_memory_bytes = properties.totalGlobalMem;
        std::memset(info->name, 0, sizeof(info->name));
        const std::size_t length = strnlen(properties.name, sizeof(properties.name));
        std::memcpy(info->name, properties.name, std::min(length, sizeof(info->name) - 1));
        stamp(info);
    });
}

int32_t rh_cuda_process_last_error(char* buffer, uint64_t size, uint64_t* needed) {
    return copy_message(process_error, buffer, size, needed);
}

int32_t rh_cuda_engine_create(const rh_cuda_engine_options* options, rh_cuda_engine_t* engine) {
    return process_call([&] {
        if (engine == nullptr)
            throw rh::cuda::Failure(rh::core::Status::invalid_argument, "engine output must not be null");
        *engine = nullptr;
        check_struct(options, "engine options");
        rh::cuda::require_device(options->device);  // no device: unavailable, before any other complaint
        auto handle = std::make_unique<rh_cuda_engine_s>();
        handle->engine = rh::cuda::make_engine(engine_options(*options));
        *engine = handle.release();
    });
}

int32_t rh_cuda_engine_destroy(rh_cuda_engine_t engine) {
    if (engine == nullptr) return RH_CUDA_OK;
    return process_call([&] { delete engine; });
}

int32_t rh_cuda_engine_last_error(rh_cuda_engine_t engine, char* buffer, uint64_t size, uint64_t* needed) {
    if (engine == nullptr || !engine->engine) return copy_message("engine handle must not be null", buffer, size, needed);
    return copy_message(engine->engine->last_error, buffer, size, needed);
}

int32_t rh_cuda_engine_restore_state(rh_cuda_engine_t handle, const rh_cuda_host_state* state) {
    return engine_call(handle, [&](rh::cuda::Engine& engine) {
        check_struct(state, "host state", offsetof(rh_cuda_host_state, meat));
        check_struct(&state->counters, "state counters");
        if (state->coefficients == nullptr || state->information == nullptr)
            throw rh::cuda::Failure(rh::core::Status::invalid_state, "state arrays must not be null");
        engine.restore_state(host_state(*state));
    });
}

int32_t rh_cuda_engine_copy_state(rh_cuda_engine_t handle, rh_cuda_host_state* state) {
    return engine_call(handle, [&](rh::cuda::Engine& engine) {
        check_struct(state, "host state", offsetof(rh_cuda_host_state, meat));
        rh::cuda::HostState copy = host_state(*state);
        engine.copy_state(copy);
        state->counters = abi_counters(copy.counters);
        stamp(state);
    });
}

int32_t rh_cuda_engine_counters(rh_cuda_engine_t handle, rh_cuda_state_counters* counters) {
    return engine_call(handle, [&](rh::cuda::Engine& engine) {
        check_struct(counters, "state counters");
        *counters = abi_counters(engine.counters());
    });
}

int32_t rh_cuda_engine_update(rh_cuda_engine_t handle, const rh_cuda_batch* batch,
                              const rh_cuda_solver_config* config, void* coefficients_out,
                              rh_cuda_diagnostics* diagnostics) {
    return engine_call(handle, [&](rh::cuda::Engine& engine) {
        check_struct(batch, "batch");
        check_struct(config, "solver config");
        check_struct(diagnostics, "diagnostics");
        const rh::core::SolverConfig core_config = solver_config(*config);
        *diagnostics = abi_diagnostics(engine.update(batch_input(*batch), core_config, coefficients_out));
    });
}

int32_t rh_cuda_engine_revert(rh_cuda_engine_t handle) {
    return engine_call(handle, [&](rh::cuda::Engine& engine) { engine.revert(); });
}

int32_t rh_cuda_engine_predict(rh_cuda_engine_t handle, const rh_cuda_batch* batch, void* out) {
    return engine_call(handle, [&](rh::cuda::Engine& engine) {
        check_struct(batch, "batch");
        engine.predict(batch_input(*batch), out);
    });
}

int32_t rh_cuda_engine_synchronize(rh_cuda_engine_t handle) {
    return engine_call(handle, [&](rh::cuda::Engine& engine) { engine.synchronize(); });
}

int32_t rh_cuda_engine_features(rh_cuda_engine_t handle, rh_cuda_features* features) {
    return engine_call(handle, [&](rh::cuda::Engine& engine) {
        check_struct(features, "features");
        *features = abi_features(engine.features());
    });
}

}  // extern "C"

// The C ABI's entry points (rh_cuda.h): each checks its structs' version and
// size and its pointers, runs inside one guard that catches every exception
// (no exception crosses the boundary) and turns it into a status code and
// a message (the engine's, or the calling thread's before an engine exists),
// and restores the caller's current device (DeviceGuard, inside the engine).
// Every translation between the ABI's structs and the engine's own types
// is abi_conversions.hpp's, which this file alone calls.
#include <algorithm>
#include <cstddef>
#include <cstring>
#include <new>
#include <string>
#include <vector>

#include "core/diagnostics.hpp"
#include "core/status.hpp"
#include "abi_conversions.hpp"
#include "engine_internal.cuh"
#include "rh_cuda.h"

namespace abi = rh::cuda::abi;

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
        abi::stamp(info);
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
        abi::stamp(info);
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
        handle->engine = rh::cuda::make_engine(abi::engine_options(*options));
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
        engine.restore_state(abi::host_state(*state));
    });
}

int32_t rh_cuda_engine_copy_state(rh_cuda_engine_t handle, rh_cuda_host_state* state) {
    return engine_call(handle, [&](rh::cuda::Engine& engine) {
        check_struct(state, "host state", offsetof(rh_cuda_host_state, meat));
        rh::cuda::HostState copy = abi::host_state(*state);
        engine.copy_state(copy);
        state->counters = abi::abi_counters(copy.counters);
        abi::stamp(state);
    });
}

int32_t rh_cuda_engine_counters(rh_cuda_engine_t handle, rh_cuda_state_counters* counters) {
    return engine_call(handle, [&](rh::cuda::Engine& engine) {
        check_struct(counters, "state counters");
        *counters = abi::abi_counters(engine.counters());
    });
}

int32_t rh_cuda_engine_update(rh_cuda_engine_t handle, const rh_cuda_batch* batch,
                              const rh_cuda_solver_config* config, void* coefficients_out,
                              rh_cuda_diagnostics* diagnostics) {
    return engine_call(handle, [&](rh::cuda::Engine& engine) {
        check_struct(batch, "batch");
        check_struct(config, "solver config");
        check_struct(diagnostics, "diagnostics");
        const rh::core::SolverConfig core_config = abi::solver_config(*config);
        const rh::cuda::BatchInput input = abi::batch_input(*batch);
        *diagnostics = abi::abi_diagnostics(engine.update(input, core_config, coefficients_out));
    });
}

int32_t rh_cuda_engine_update_batches(rh_cuda_engine_t handle, const rh_cuda_batch* batch, int64_t batch_size,
                                      const rh_cuda_solver_config* config, void* coefficients_out,
                                      rh_cuda_diagnostics* diagnostics, int64_t count) {
    return engine_call(handle, [&](rh::cuda::Engine& engine) {
        check_struct(batch, "batch");
        check_struct(config, "solver config");
        if (batch_size < 1)
            throw rh::cuda::Failure(rh::core::Status::invalid_argument, "batch_size must be a positive integer");
        const int64_t slices = batch->rows < 1 ? 0 : 1 + (batch->rows - 1) / batch_size;
        if (count != slices)
            throw rh::cuda::Failure(rh::core::Status::invalid_argument,
                                    "diagnostics must hold one struct per slice (" + std::to_string(slices) + "), got " +
                                        std::to_string(count));
        if (diagnostics == nullptr && count > 0)
            throw rh::cuda::Failure(rh::core::Status::invalid_argument, "diagnostics must not be null");
        for (int64_t k = 0; k < count; ++k) check_struct(diagnostics + k, "diagnostics");
        const rh::core::SolverConfig core_config = abi::solver_config(*config);
        const rh::cuda::BatchInput input = abi::batch_input(*batch);
        const std::vector<rh::cuda::UpdateReport> reports =
            engine.update_batches(input, batch_size, core_config, coefficients_out);
        for (std::size_t k = 0; k < reports.size(); ++k) diagnostics[k] = abi::abi_diagnostics(reports[k]);
    });
}

int32_t rh_cuda_engine_revert(rh_cuda_engine_t handle) {
    return engine_call(handle, [&](rh::cuda::Engine& engine) { engine.revert(); });
}

int32_t rh_cuda_engine_predict(rh_cuda_engine_t handle, const rh_cuda_batch* batch, void* out) {
    return engine_call(handle, [&](rh::cuda::Engine& engine) {
        check_struct(batch, "batch");
        engine.predict(abi::batch_input(*batch), out);
    });
}

int32_t rh_cuda_engine_synchronize(rh_cuda_engine_t handle) {
    return engine_call(handle, [&](rh::cuda::Engine& engine) { engine.synchronize(); });
}

int32_t rh_cuda_engine_features(rh_cuda_engine_t handle, rh_cuda_features* features) {
    return engine_call(handle, [&](rh::cuda::Engine& engine) {
        check_struct(features, "features");
        *features = abi::abi_features(engine.features());
    });
}

}  // extern "C"

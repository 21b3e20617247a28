// rh_cuda.hpp: a small C++ RAII wrapper over the C ABI (rh_cuda.h), for
// bindings. It owns an engine handle, stamps every struct with the ABI
// version and its size, and turns a failing status into a CudaEngineError
// carrying the status and the engine's (or the process's) message.
// Header-only; it uses nothing of the engine but rh_cuda.h.
#pragma once

#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "rh_cuda.h"

namespace rh::cuda_abi {

class CudaEngineError : public std::runtime_error {
public:
    CudaEngineError(int32_t status, const std::string& message) : std::runtime_error(message), status_(status) {}
    int32_t status() const noexcept { return status_; }

private:
    int32_t status_;
};

// A struct of the ABI, zeroed and stamped.
template <class S>
S make() {
    S value{};
    value.abi_version = RH_CUDA_ABI_VERSION;
    value.struct_size = sizeof(S);
    return value;
}

inline std::string process_last_error() {
    uint64_t needed = 0;
    rh_cuda_process_last_error(nullptr, 0, &needed);
    std::string message(needed, '\0');
    rh_cuda_process_last_error(message.data(), needed, &needed);
    message.resize(needed > 0 ? needed - 1 : 0);
    return message;
}

inline void check_process(int32_t status) {
    if (status != RH_CUDA_OK) throw CudaEngineError(status, process_last_error());
}

// The library's ABI must have this header's major version.
inline void check_abi() {
    const uint32_t version = rh_cuda_abi_version();
    if ((version >> 16) != RH_CUDA_ABI_VERSION_MAJOR)
        throw CudaEngineError(RH_CUDA_ABI_MISMATCH, "the CUDA engine library has ABI " +
                                                        std::to_string(version >> 16) + "." +
                                                        std::to_string(version & 0xffff) + ", this binding needs " +
                                                        std::to_string(RH_CUDA_ABI_VERSION_MAJOR) + ".x");
}

inline rh_cuda_runtime_info runtime_info() {
    auto info = make<rh_cuda_runtime_info>();
    check_process(rh_cuda_get_runtime_info(&info));
    return info;
}

inline rh_cuda_device_info device_info(int32_t device) {
    auto info = make<rh_cuda_device_info>();
    check_process(rh_cuda_get_device_info(device, &info));
    return info;
}

class Engine {
public:
    explicit Engine(const rh_cuda_engine_options& options) {
        check_abi();
        check_process(rh_cuda_engine_create(&options, &handle_));
    }
    ~Engine() { rh_cuda_engine_destroy(handle_); }
    Engine(const Engine&) = delete;
    Engine& operator=(const Engine&) = delete;
    Engine(Engine&& other) noexcept : handle_(std::exchange(other.handle_, nullptr)) {}

    void restore_state(const rh_cuda_host_state& state) { check(rh_cuda_engine_restore_state(handle_, &state)); }
    void copy_state(rh_cuda_host_state& state) { check(rh_cuda_engine_copy_state(handle_, &state)); }
    rh_cuda_state_counters counters() {
        auto counters = make<rh_cuda_state_counters>();
        check(rh_cuda_engine_counters(handle_, &counters));
        return counters;
    }
    rh_cuda_diagnostics update(const rh_cuda_batch& batch, const rh_cuda_solver_config& config,
                               void* coefficients_out) {
        auto diagnostics = make<rh_cuda_diagnostics>();
        check(rh_cuda_engine_update(handle_, &batch, &config, coefficients_out, &diagnostics));
        return diagnostics;
    }
    // One diagnostics struct per slice of batch_size rows (ABI 1.6).
    std::vector<rh_cuda_diagnostics> update_batches(const rh_cuda_batch& batch, int64_t batch_size,
                                                    const rh_cuda_solver_config& config, void* coefficients_out) {
        const int64_t slices = batch.rows < 1 || batch_size < 1 ? 0 : 1 + (batch.rows - 1) / batch_size;
        std::vector<rh_cuda_diagnostics> diagnostics(static_cast<std::size_t>(slices), make<rh_cuda_diagnostics>());
        check(rh_cuda_engine_update_batches(handle_, &batch, batch_size, &config, coefficients_out,
                                            diagnostics.data(), slices));
        return diagnostics;
    }
    void revert() { check(rh_cuda_engine_revert(handle_)); }
    rh_cuda_engine_t handle() const noexcept { return handle_; }
    void predict(const rh_cuda_batch& batch, void* out) { check(rh_cuda_engine_predict(handle_, &batch, out)); }
    void synchronize() { check(rh_cuda_engine_synchronize(handle_)); }
    rh_cuda_features features() {
        auto features = make<rh_cuda_features>();
        check(rh_cuda_engine_features(handle_, &features));
        return features;
    }
    std::string last_error() const {
        uint64_t needed = 0;
        rh_cuda_engine_last_error(handle_, nullptr, 0, &needed);
        std::string message(needed, '\0');
        rh_cuda_engine_last_error(handle_, message.data(), needed, &needed);
        message.resize(needed > 0 ? needed - 1 : 0);
        return message;
    }

private:
    void check(int32_t status) const {
        if (status != RH_CUDA_OK) throw CudaEngineError(status, last_error());
    }
    rh_cuda_engine_t handle_ = nullptr;
};

}  // namespace rh::cuda_abi

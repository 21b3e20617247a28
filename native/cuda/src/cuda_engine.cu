#include "cuda_engine.cuh"

#include <algorithm>
#include <cstddef>
#include <string>

#include "core/invariants.hpp"

namespace rh::cuda {

namespace {

// The tiles of rows per block the block solver takes: the option, or the default.
int block_tiles_for(int requested) {
    if (requested < 0 || requested > kMaxBlockTiles)
        throw Failure(core::Status::invalid_argument, "block_tiles must be from 1 to " +
                                                          std::to_string(kMaxBlockTiles) + " (0: the default), got " +
                                                          std::to_string(requested));
    return requested == 0 ? kBlockSolverTilesPerBlock : requested;
}

std::int64_t checked_parameters(const EngineOptions& options) {
    if (options.n_features < 1) throw Failure(core::Status::invalid_argument, "n_features must be at least one");
    const std::int64_t d = options.n_features + (options.fit_intercept ? 1 : 0);
    if (d > kMaxParameters)
        throw Failure(core::Status::invalid_argument, "the CUDA engine serves at most " +
                                                          std::to_string(kMaxParameters) + " parameters, got " +
                                                          std::to_string(d));
    return d;
}

}  // namespace

template <class T>
CudaEngine<T>::CudaEngine(const EngineOptions& options)
    : Engine(options.device),
      p_(options.n_features),
      d_(checked_parameters(options)),
      intercept_(options.fit_intercept),
      cuda_graphs_(options.cuda_graphs),
      fast_math_(options.fast_math && sizeof(T) == 4),
      solver_choice_(options.solver_choice),
      block_tiles_(block_tiles_for(options.block_tiles)),
      context_(options.device, options.stream, fast_math_),
      stream_(context_.stream()),
      blas_(context_.blas()),
      solver_handle_(context_.solver()),
      host_terms_(2 * (options.n_features + 1)),
      exchange_(p_, d_),
      driver_vectors_(static_cast<std::size_t>(7 * d_)) {
    DeviceGuard guard(device_);
    closing_done_.make();
    loop_solved_.make();
    caller_released_.make();
    ws_.reserve_parameters(device_, p_, d_, block_solver_may_run(solver_choice_ == SolverChoice::block, d_), stream_);
    solver_.reserve(device_, solver_handle_, d_);
    counters_.n_features_in = p_;
    counters_.fit_intercept = intercept_;
    host_theta_.assign(static_cast<std::size_t>(d_), T(0));
    host_theta_next_.assign(static_cast<std::size_t>(d_), T(0));
    RH_CUDA_CHECK(cudaMemsetAsync(ws_.theta_current.data(), 0, sizeof(T) * d_, stream_));
    RH_CUDA_CHECK(cudaMemsetAsync(ws_.J_current.data(), 0, sizeof(T) * d_ * d_, stream_));
    RH_CUDA_CHECK(cudaStreamSynchronize(stream_));
}

template <class T>
void CudaEngine<T>::restore_state(const HostState& state) {
    const core::StateCounters& counters = state.counters;
    if (counters.n_features_in != p_ || counters.fit_intercept != intercept_ || state.n_parameters != d_)
        throw Failure(core::Status::invalid_state, "state shape does not match the engine's features and intercept");
    core::check_counters(counters);
    const T* meat = static_cast<const T*>(state.meat);
    const core::StateView<T> view{static_cast<const T*>(state.coefficients), static_cast<const T*>(state.information),
                                  counters, meat};
    core::check_state_values(view);
    DeviceGuard guard(device_);
    revertible_ = false;
    revert_to_before_ = false;
    if (meat != nullptr) {
        ws_.reserve_meat(device_, 0, d_);
        RH_CUDA_CHECK(cudaMemcpyAsync(ws_.meat_current.data(), meat, sizeof(T) * d_ * d_, cudaMemcpyHostToDevice,
                                      stream_));
    }
    tracks_meat_ = meat != nullptr;
    RH_CUDA_CHECK(cudaMemcpyAsync(ws_.theta_current.data(), state.coefficients, sizeof(T) * d_,
                                  cudaMemcpyHostToDevice, stream_));
    RH_CUDA_CHECK(cudaMemcpyAsync(ws_.J_current.data(), state.information, sizeof(T) * d_ * d_,
                                  cudaMemcpyHostToDevice, stream_));
    RH_CUDA_CHECK(cudaStreamSynchronize(stream_));
    const T* coefficients = static_cast<const T*>(state.coefficients);
    std::copy(coefficients, coefficients + d_, host_theta_.begin());
    counters_ = counters;
}

template <class T>
void CudaEngine<T>::copy_state(HostState& state) {
    if (state.n_parameters != d_ || state.coefficients == nullptr || state.information == nullptr)
        throw Failure(core::Status::invalid_argument, "the host state's arrays must hold d and d x d values");
    DeviceGuard guard(device_);
    RH_CUDA_CHECK(cudaMemcpyAsync(state.coefficients, ws_.theta_current.data(), sizeof(T) * d_,
                                  cudaMemcpyDeviceToHost, stream_));
    RH_CUDA_CHECK(cudaMemcpyAsync(state.information, ws_.J_current.data(), sizeof(T) * d_ * d_,
                                  cudaMemcpyDeviceToHost, stream_));
    if (void* meat = state.meat; meat != nullptr) {
        if (!tracks_meat_)
            throw Failure(core::Status::invalid_state, "the engine keeps no meat: it was restored without one");
        RH_CUDA_CHECK(cudaMemcpyAsync(meat, ws_.meat_current.data(), sizeof(T) * d_ * d_, cudaMemcpyDeviceToHost,
                                      stream_));
    }
    RH_CUDA_CHECK(cudaStreamSynchronize(stream_));
    state.counters = counters_;
}

template <class T>
void CudaEngine<T>::revert() {
    if (!revertible_)
        throw Failure(core::Status::invalid_state,
                      "no update to revert: the engine's state is not the one an update just committed");
    if (revert_to_before_) {  // update_batches: the state before the call
        DeviceGuard guard(device_);
        restore_state_before();
        return;
    }
    // The commit's swaps, undone: the previous state never left the staged buffers.
    ws_.theta_current.swap(ws_.theta_next);
    ws_.J_current.swap(ws_.J_next);
    if (tracks_meat_) ws_.meat_current.swap(ws_.meat_next);
    host_theta_.swap(host_theta_next_);
    counters_ = previous_counters_;
    revertible_ = false;
}

template <class T>
void CudaEngine<T>::synchronize() {
    DeviceGuard guard(device_);
    RH_CUDA_CHECK(cudaStreamSynchronize(stream_));
}

template <class T>
EngineFeatures CudaEngine<T>::features() const {
    EngineFeatures out;
    out.device = device_;
    out.dtype = element_type_of<T>();
    out.n_parameters = d_;
    out.updates = updates_;
    out.host_syncs = host_syncs_;
    out.workspace_allocations = ws_.allocations() + solver_.allocations();
    out.workspace_bytes = ws_.bytes() + solver_.bytes() + (staging_ ? staging_->bytes() : 0);
    out.graph_captures = newton_graph_.captures() + lamm_gradient_graph_.captures() + lamm_trial_graph_.captures() +
                         newton_loop_.captures();
    out.graph_replays = newton_graph_.replays() + lamm_gradient_graph_.replays() + lamm_trial_graph_.replays() +
                        newton_loop_.replays();
    out.graph_fallbacks = newton_graph_.fallbacks() + lamm_gradient_graph_.fallbacks() +
                          lamm_trial_graph_.fallbacks() + newton_loop_.fallbacks();
    out.cuda_graphs = cuda_graphs_;
    out.fast_math = fast_math_;
    out.owns_stream = context_.owns_stream();
    out.stream = reinterpret_cast<std::uint64_t>(stream_);
    return out;
}

void require_device(int device) {
    int count = 0;
    const cudaError_t error = cudaGetDeviceCount(&count);
    if (error != cudaSuccess || count == 0) {
        cudaGetLastError();
        throw Failure(core::Status::unavailable,
                      std::string("no CUDA device is available (") +
                          (error != cudaSuccess ? cudaGetErrorString(error) : "device count 0") + ")");
    }
    if (device < 0 || device >= count)
        throw Failure(core::Status::invalid_argument, "CUDA device " + std::to_string(device) +
                                                          " does not exist (" + std::to_string(count) + " devices)");
}

std::unique_ptr<Engine> make_engine(const EngineOptions& options) {
    require_device(options.device);
    if (options.dtype == ElementType::float64) return std::make_unique<CudaEngine<double>>(options);
    return std::make_unique<CudaEngine<float>>(options);
}

template class CudaEngine<float>;
template class CudaEngine<double>;

}  // namespace rh::cuda

#include "cuda_engine.cuh"

#include <algorithm>
#include <cstddef>
#include <string>

#include "core/invariants.hpp"

namespace rh::cuda {

namespace {

rh_cuda_state_counters to_abi(const core::StateCounters& c) {
    rh_cuda_state_counters out{};
    out.abi_version = RH_CUDA_ABI_VERSION;
    out.struct_size = sizeof(out);
    out.n_features_in = c.n_features_in;
    out.n_samples_seen = c.n_samples_seen;
    out.batch_count = c.batch_count;
    out.previous_lambda = c.previous_lambda;
    out.weight_sum = c.weight_sum;
    out.fit_intercept = c.fit_intercept ? 1 : 0;
    return out;
}

// The host state's meat: none in a struct of ABI 1.3's size (before the field existed).
void* meat_of(const rh_cuda_host_state& state) {
    return state.struct_size >= offsetof(rh_cuda_host_state, meat) + sizeof(void*) ? state.meat : nullptr;
}

}  // namespace

template <class T>
CudaEngine<T>::CudaEngine(const rh_cuda_engine_options& options)
    : Engine(options.device),
      p_(options.n_features),
      d_(options.n_features + (options.fit_intercept ? 1 : 0)),
      intercept_(options.fit_intercept != 0),
      cuda_graphs_(options.cuda_graphs != 0),
      fast_math_(options.fast_math != 0 && sizeof(T) == 4),
      solver_choice_(options.solver_choice),
      block_tiles_(block_solver_tiles_per_block_from_environment()),
      host_terms_(2 * (options.n_features + 1)) {
    if (p_ < 1) throw Failure(core::Status::invalid_argument, "n_features must be at least one");
    if (solver_choice_ > RH_CUDA_SOLVER_BLOCK)
        throw Failure(core::Status::invalid_argument,
                      "solver_choice must be RH_CUDA_SOLVER_AUTO, RH_CUDA_SOLVER_PIPELINE or RH_CUDA_SOLVER_BLOCK");
    if (d_ > kMaxParameters)
        throw Failure(core::Status::invalid_argument,
                      "the CUDA engine serves at most " + std::to_string(kMaxParameters) + " parameters, got " +
                          std::to_string(d_));
    DeviceGuard guard(device_);
    try {
        if (options.stream != 0) {
            stream_ = reinterpret_cast<cudaStream_t>(options.stream);
        } else {
            RH_CUDA_CHECK(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
            owns_stream_ = true;
        }
        RH_CUBLAS_CHECK(cublasCreate(&blas_));
        RH_CUBLAS_CHECK(cublasSetStream(blas_, stream_));
        // Strict precision unless asked: no TF32 in float32 products.
        RH_CUBLAS_CHECK(cublasSetMathMode(blas_, fast_math_ ? CUBLAS_TF32_TENSOR_OP_MATH : CUBLAS_DEFAULT_MATH));
        RH_CUSOLVER_CHECK(cusolverDnCreate(&solver_handle_));
        RH_CUSOLVER_CHECK(cusolverDnSetStream(solver_handle_, stream_));
        ws_.reserve_parameters(device_, p_, d_);
        solver_.reserve(device_, solver_handle_, d_);
        counters_.n_features_in = p_;
        counters_.fit_intercept = intercept_;
        host_theta_.assign(static_cast<std::size_t>(d_), T(0));
        host_theta_next_.assign(static_cast<std::size_t>(d_), T(0));
        RH_CUDA_CHECK(cudaMemsetAsync(ws_.theta_current.data(), 0, sizeof(T) * d_, stream_));
        RH_CUDA_CHECK(cudaMemsetAsync(ws_.J_current.data(), 0, sizeof(T) * d_ * d_, stream_));
        RH_CUDA_CHECK(cudaStreamSynchronize(stream_));
    } catch (...) {
        if (solver_handle_ != nullptr) cusolverDnDestroy(solver_handle_);
        if (blas_ != nullptr) cublasDestroy(blas_);
        if (owns_stream_) cudaStreamDestroy(stream_);
        throw;
    }
}

template <class T>
CudaEngine<T>::~CudaEngine() {
    DeviceGuard guard(device_);
    cudaStreamSynchronize(stream_);
    cusolverDnDestroy(solver_handle_);
    cublasDestroy(blas_);
    if (owns_stream_) cudaStreamDestroy(stream_);
}

template <class T>
void CudaEngine<T>::restore_state(const rh_cuda_host_state& state) {
    core::StateCounters counters{state.counters.n_features_in, state.counters.fit_intercept != 0,
                                 state.counters.n_samples_seen, state.counters.batch_count,
                                 state.counters.previous_lambda, state.counters.weight_sum};
    if (counters.n_features_in != p_ || counters.fit_intercept != intercept_ || state.n_parameters != d_)
        throw Failure(core::Status::invalid_state, "state shape does not match the engine's features and intercept");
    core::check_counters(counters);
    const T* meat = static_cast<const T*>(meat_of(state));
    const core::StateView<T> view{static_cast<const T*>(state.coefficients), static_cast<const T*>(state.information),
                                  counters, meat};
    core::check_state_values(view);
    DeviceGuard guard(device_);
    revertible_ = false;
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
void CudaEngine<T>::copy_state(rh_cuda_host_state& state) {
    if (state.n_parameters != d_ || state.coefficients == nullptr || state.information == nullptr)
        throw Failure(core::Status::invalid_argument, "the host state's arrays must hold d and d x d values");
    DeviceGuard guard(device_);
    RH_CUDA_CHECK(cudaMemcpyAsync(state.coefficients, ws_.theta_current.data(), sizeof(T) * d_,
                                  cudaMemcpyDeviceToHost, stream_));
    RH_CUDA_CHECK(cudaMemcpyAsync(state.information, ws_.J_current.data(), sizeof(T) * d_ * d_,
                                  cudaMemcpyDeviceToHost, stream_));
    if (void* meat = meat_of(state); meat != nullptr) {
        if (!tracks_meat_)
            throw Failure(core::Status::invalid_state, "the engine keeps no meat: it was restored without one");
        RH_CUDA_CHECK(cudaMemcpyAsync(meat, ws_.meat_current.data(), sizeof(T) * d_ * d_, cudaMemcpyDeviceToHost,
                                      stream_));
    }
    RH_CUDA_CHECK(cudaStreamSynchronize(stream_));
    state.counters = to_abi(counters_);
}

template <class T>
rh_cuda_state_counters CudaEngine<T>::counters() const {
    return to_abi(counters_);
}

template <class T>
void CudaEngine<T>::revert() {
    if (!revertible_)
        throw Failure(core::Status::invalid_state,
                      "no update to revert: the engine's state is not the one an update just committed");
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
rh_cuda_features CudaEngine<T>::features() const {
    rh_cuda_features out{};
    out.abi_version = RH_CUDA_ABI_VERSION;
    out.struct_size = sizeof(out);
    out.device = device_;
    out.dtype = sizeof(T) == 8 ? RH_CUDA_FLOAT64 : RH_CUDA_FLOAT32;
    out.n_parameters = d_;
    out.updates = updates_;
    out.host_syncs = host_syncs_;
    out.workspace_allocations = ws_.allocations() + solver_.allocations();
    out.workspace_bytes = ws_.bytes() + solver_.bytes();
    out.graph_captures = newton_graph_.captures() + lamm_graph_.captures();
    out.graph_replays = newton_graph_.replays() + lamm_graph_.replays();
    out.graph_fallbacks = newton_graph_.fallbacks() + lamm_graph_.fallbacks();
    out.cuda_graphs = cuda_graphs_ ? 1 : 0;
    out.fast_math = fast_math_ ? 1 : 0;
    out.owns_stream = owns_stream_ ? 1 : 0;
    out.stream = reinterpret_cast<std::uint64_t>(stream_);
    return out;
}

std::unique_ptr<Engine> make_engine(const rh_cuda_engine_options& options) {
    int count = 0;
    const cudaError_t error = cudaGetDeviceCount(&count);
    if (error != cudaSuccess || count == 0) {
        cudaGetLastError();
        throw Failure(core::Status::unavailable,
                      std::string("no CUDA device is available (") +
                          (error != cudaSuccess ? cudaGetErrorString(error) : "device count 0") + ")");
    }
    if (options.device < 0 || options.device >= count)
        throw Failure(core::Status::invalid_argument, "CUDA device " + std::to_string(options.device) +
                                                          " does not exist (" + std::to_string(count) + " devices)");
    if (options.dtype == RH_CUDA_FLOAT64) return std::make_unique<CudaEngine<double>>(options);
    if (options.dtype == RH_CUDA_FLOAT32) return std::make_unique<CudaEngine<float>>(options);
    throw Failure(core::Status::invalid_argument, "dtype must be either 'float32' or 'float64'");
}

template class CudaEngine<float>;
template class CudaEngine<double>;

}  // namespace rh::cuda

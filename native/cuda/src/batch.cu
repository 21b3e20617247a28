#include "batch.cuh"

#include <string>

#include "huber_kernels.cuh"
#include "launch.cuh"

namespace rh::cuda {

namespace {

void fail(core::Status status, const std::string& message) { throw Failure(status, message); }

// Waits on the engine's stream for the work already queued on the producer's.
void join_producer(std::uint64_t producer, cudaStream_t stream) {
    if (producer == 0 || reinterpret_cast<cudaStream_t>(producer) == stream) return;
    cudaEvent_t ready;
    RH_CUDA_CHECK(cudaEventCreateWithFlags(&ready, cudaEventDisableTiming));
    const cudaError_t recorded = cudaEventRecord(ready, reinterpret_cast<cudaStream_t>(producer));
    const cudaError_t waited = recorded == cudaSuccess ? cudaStreamWaitEvent(stream, ready, 0) : recorded;
    cudaEventDestroy(ready);
    RH_CUDA_CHECK(waited);
}

void check_on_device(const void* pointer, int device, const char* name) {
    if (pointer == nullptr) return;
    cudaPointerAttributes attributes;
    if (cudaPointerGetAttributes(&attributes, pointer) != cudaSuccess) {
        cudaGetLastError();
        fail(core::Status::invalid_argument, std::string(name) + " is not device memory");
    }
    if (attributes.type != cudaMemoryTypeDevice && attributes.type != cudaMemoryTypeManaged)
        fail(core::Status::invalid_argument, std::string(name) + " is not device memory");
    if (attributes.device != device)
        fail(core::Status::invalid_argument, std::string(name) + " is on CUDA device " +
                                                 std::to_string(attributes.device) + ", the engine on device " +
                                                 std::to_string(device));
}

}  // namespace

void check_batch_description(const BatchInput& batch, ElementType dtype, int device, std::int64_t features,
                             bool with_targets) {
    if (batch.dtype != dtype)
        fail(core::Status::invalid_argument, "the batch's dtype is not the engine's");
    if (batch.rows < 1) fail(core::Status::invalid_argument, "X must have at least one row");
    if (batch.features < 1) fail(core::Status::invalid_argument, "X must have at least one feature");
    if (batch.features != features)
        fail(core::Status::invalid_argument, "X has " + std::to_string(batch.features) +
                                                 " features, but the state expects " + std::to_string(features));
    if (batch.rows * (batch.features + 1) > INT32_MAX)
        fail(core::Status::invalid_argument,
             "batch too large for the 32-bit cuBLAS interface; split it into smaller batches");
    if (batch.X == nullptr || (with_targets && batch.y == nullptr))
        fail(core::Status::invalid_argument, "X and y must not be null");
    if (batch.memory == BatchMemory::device) {
        check_on_device(batch.X, device, "X");
        if (with_targets) {
            check_on_device(batch.y, device, "y");
            check_on_device(batch.sample_weight, device, "sample_weight");
        }
    }
}

template <class T>
StagedBatch<T> stage_batch(const BatchInput& batch, Workspace<T>& ws, int device, std::int64_t p,
                           std::int64_t d, cudaStream_t stream) {
    const std::int64_t n = batch.rows;
    const bool host = batch.memory == BatchMemory::host;
    const bool weighted = batch.sample_weight != nullptr;
    ws.reserve_rows(device, n, p, d, host, !weighted, stream);
    StagedBatch<T> staged{n, static_cast<const T*>(batch.X), static_cast<const T*>(batch.y),
                          static_cast<const T*>(batch.sample_weight), weighted};
    if (host) {
        RH_CUDA_CHECK(cudaMemcpyAsync(ws.X.data(), batch.X, sizeof(T) * n * p, cudaMemcpyHostToDevice, stream));
        RH_CUDA_CHECK(cudaMemcpyAsync(ws.y.data(), batch.y, sizeof(T) * n, cudaMemcpyHostToDevice, stream));
        if (weighted)
            RH_CUDA_CHECK(
                cudaMemcpyAsync(ws.w.data(), batch.sample_weight, sizeof(T) * n, cudaMemcpyHostToDevice, stream));
        staged.X = ws.X.data();
        staged.y = ws.y.data();
        staged.w = weighted ? ws.w.data() : nullptr;
    } else {
        join_producer(batch.producer_stream, stream);
    }
    if (!weighted) staged.w = ws.ones.data();
    return staged;
}

void refuse_non_finite(const char* name) {
    throw Failure(core::Status::non_finite_input, std::string(name) + " must not contain NaN or infinite values");
}

template <class T>
void launch_batch_check(const StagedBatch<T>& batch, std::int64_t p, Workspace<T>& ws, double* host_sums,
                        cudaStream_t stream) {
    const std::int64_t n = batch.rows;
    launch_check_batch<T>(stream, n, p, batch.X, batch.y, batch.weighted ? batch.w : nullptr, ws.partials.data());
    send_check_sums(ws.partials.data(), row_blocks(n * p), ws, host_sums, stream);
}

template <class T>
void send_check_sums(const double* partials, int blocks, Workspace<T>& ws, double* host_sums, cudaStream_t stream) {
    launch_finish_sums(stream, partials, blocks, kBatchCheckSums, ws.sums.data());
    RH_CUDA_CHECK(
        cudaMemcpyAsync(host_sums, ws.sums.data(), sizeof(double) * kBatchCheckSums, cudaMemcpyDeviceToHost, stream));
}

double judge_batch_check(const double* host_sums, std::int64_t rows, bool weighted) {
    if (host_sums[kNonFiniteX] > 0) refuse_non_finite("X");
    if (host_sums[kNonFiniteY] > 0) refuse_non_finite("y");
    if (!weighted) return static_cast<double>(rows);
    if (host_sums[kNonFiniteW] > 0) refuse_non_finite("sample_weight");
    if (host_sums[kNegativeW] > 0) fail(core::Status::invalid_weights, "sample_weight must be non-negative");
    if (host_sums[kPositiveW] == 0) fail(core::Status::invalid_weights, "sample_weight must have a positive sum");
    return host_sums[kWeightSum];
}

template <class T>
double check_batch_values(const StagedBatch<T>& batch, std::int64_t p, Workspace<T>& ws, double* host_sums,
                          cudaStream_t stream) {
    launch_batch_check(batch, p, ws, host_sums, stream);
    RH_CUDA_CHECK(cudaStreamSynchronize(stream));
    return judge_batch_check(host_sums, batch.rows, batch.weighted);
}

template StagedBatch<float> stage_batch<float>(const BatchInput&, Workspace<float>&, int, std::int64_t,
                                               std::int64_t, cudaStream_t);
template StagedBatch<double> stage_batch<double>(const BatchInput&, Workspace<double>&, int, std::int64_t,
                                                 std::int64_t, cudaStream_t);
template void launch_batch_check<float>(const StagedBatch<float>&, std::int64_t, Workspace<float>&, double*,
                                        cudaStream_t);
template void launch_batch_check<double>(const StagedBatch<double>&, std::int64_t, Workspace<double>&, double*,
                                         cudaStream_t);
template void send_check_sums<float>(const double*, int, Workspace<float>&, double*, cudaStream_t);
template void send_check_sums<double>(const double*, int, Workspace<double>&, double*, cudaStream_t);
template double check_batch_values<float>(const StagedBatch<float>&, std::int64_t, Workspace<float>&, double*,
                                          cudaStream_t);
template double check_batch_values<double>(const StagedBatch<double>&, std::int64_t, Workspace<double>&, double*,
                                           cudaStream_t);

}  // namespace rh::cuda

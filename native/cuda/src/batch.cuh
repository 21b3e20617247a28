// A batch on its way into the engine: the host-side checks of its
// description (sizes, dtype, where it lives), its staging (a host batch is
// copied into the engine's buffers; a device batch is read in place once the
// engine's stream waits for the producer's), and the checks of its values on
// the device (finite X, y, weights; weights non-negative with a positive
// sum), read back with the batch's weight in one synchronization. The
// messages are the Python validators' (validation.py), word for word.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "engine_internal.cuh"
#include "workspace.cuh"

namespace rh::cuda {

template <class T>
struct StagedBatch {
    std::int64_t rows = 0;
    const T* X = nullptr;
    const T* y = nullptr;
    const T* w = nullptr;  // the unit weights when the batch has none
    bool weighted = false;
};

// Checks the description of `batch` for an engine of `dtype` on `device`
// (features: the engine's p; with_targets: y is required).
void check_batch_description(const BatchInput& batch, ElementType dtype, int device, std::int64_t features,
                             bool with_targets);

// Stages the batch (reserving the engine's row buffers) on `stream`.
template <class T>
StagedBatch<T> stage_batch(const BatchInput& batch, Workspace<T>& ws, int device, std::int64_t p,
                           std::int64_t d, cudaStream_t stream);

// The device checks of the staged values; returns the batch's weight
// (sum w, in double). Throws core::EngineError with the validators' message.
// (The block solver makes the same check in its launch for a batch of unit
// weights: refuse_non_finite gives its failure the same words.) One
// synchronization: launch_batch_check, the wait, judge_batch_check.
template <class T>
double check_batch_values(const StagedBatch<T>& batch, std::int64_t p, Workspace<T>& ws, double* host_sums,
                          cudaStream_t stream);

// The same checks launched on `stream`, their sums copied behind them into
// `host_sums` (pinned, kBatchCheckSums doubles), not waited for: a batch of
// unit weights on the host route has them judged after the solve's first
// read-back instead (DevicePasses::wait), since its weight is its rows.
template <class T>
void launch_batch_check(const StagedBatch<T>& batch, std::int64_t p, Workspace<T>& ws, double* host_sums,
                        cudaStream_t stream);

// The check's sums over `blocks` blocks' partials (kBatchCheckSums a block)
// into `host_sums` behind them on `stream`, not waited for.
template <class T>
void send_check_sums(const double* partials, int blocks, Workspace<T>& ws, double* host_sums, cudaStream_t stream);

// A batch of unit weights on the host route: its value check, judged after
// the solve's first read-back (DevicePasses::wait). It is launched with the
// first point pass's rows when p <= kRowProductColumns (launch_start_rows
// counts X's and y's non-finite entries in the same read), else, or when a
// wait comes first, on its own (launch_batch_check).
struct DeferredCheck {
    double* host_sums = nullptr;  // null: no check awaits its judgement
    bool launched = false;
    bool pending() const { return host_sums != nullptr; }
    bool unlaunched() const { return host_sums != nullptr && !launched; }
};

// The judgement of those sums once the stream has passed them: the batch's
// weight (its rows when it has no weights), or the validators' failure.
double judge_batch_check(const double* host_sums, std::int64_t rows, bool weighted);

// The failure of a batch whose `name` (X, y, sample_weight) holds a NaN or
// an infinity.
[[noreturn]] void refuse_non_finite(const char* name);

}  // namespace rh::cuda

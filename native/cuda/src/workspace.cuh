// The CUDA engine's device buffers: the state (current and staged next),
// the batch's staging, the per-row and per-parameter work arrays and the
// reductions' partials. Sized by (rows, p, d) and grown only when a larger
// batch arrives, every growth counted: steady-state updates allocate
// nothing. Released with the engine.
#pragma once

#include <cstdint>

#include "batch_constants.cuh"
#include "block_solver.cuh"
#include "device_arena.cuh"
#include "engine_internal.cuh"
#include "huber_kernels.cuh"
#include "newton_replay.cuh"
#include "objective.cuh"

namespace rh::cuda {

template <class T>
struct Workspace {
    // The storage of every array reserve_parameters sizes (views into it):
    // one allocation where a new engine made 26 (and freed 26 when it went;
    // a cold stream builds an engine inside its timer). Declared first, so
    // released after the views.
    DeviceArena parameter_arena;
    // The storage of every array reserve_rows sizes by a batch's rows (views
    // into it): one allocation where a cold stream's first batch made seven
    // to ten; placed again, larger, when a larger batch comes (the arrays
    // are per-batch work: nothing in them outlives the batch).
    DeviceArena row_arena;
    // The state: current (committed) and next (staged until the update succeeds).
    DeviceArray<T> theta_current, theta_next, J_current, J_next;
    // The meat, current and next (when the engine tracks it), and a batch's
    // w score(r_hat)^2 (amendment 0003).
    DeviceArray<T> meat_current, meat_next, meat_weights;
    // A host batch's copy (device batches are read in place), unit weights.
    DeviceArray<T> X, y, w, ones;
    // Per row: residual, w score, w kappa, Z step; the Gram's weighted rows
    // (n x d); LAMM's trial products and residuals (n x trials).
    DeviceArray<T> r, s, c, dz, weighted_rows, trial_products, trial_residuals;
    // Per parameter: the point the host's driver is at (uploaded), the step,
    // the gradient, X' s, the penalty mask and history direction; the trial
    // points of a line search's pass (d x kPassPoints); LAMM's trial inputs
    // as the host uploads them (candidates d x K, their changes' feature
    // part p x K and intercept part K, K = kLammTrialsPerPass); the Gram and
    // the system matrix (d x d).
    DeviceArray<T> theta, step, gradient, product, mask, history, points, trial_inputs;
    DeviceArray<T> G, H;
    // Amendment 0002's majorizer: the Gram with the row weights (formed once
    // per batch, on first need).
    DeviceArray<T> G_majorizer;
    // The reductions' partials; the system's flags; what the host's driver
    // hands a pass (the residual's move, the phi of LAMM's trials ahead).
    DeviceArray<double> partials, sums, gram_partials;
    DeviceArray<SystemFlags> system;
    DeviceArray<PassInputs> inputs;
    // A batch's values that a Newton direction's launches read on the
    // device (batch_constants.cuh), written once a batch.
    DeviceArray<BatchConstants<T>> constants;
    // The Newton solve driven on the device (newton_replay.cuh): the pass
    // record its passes write and the loop's control, progress and outcome.
    DeviceArray<PassRecord> pass_record;
    DeviceArray<DeviceNewtonLoop> newton_loop;
    // The block solver's (block_solver.cuh; only where d fits it): per block
    // the matrices, vectors, score sums and flags; the partial sums; its outcome.
    DeviceArray<T> block_matrices, block_vectors;
    DeviceArray<double> block_score_sums, block_partials;
    DeviceArray<SystemFlags> block_flags;
    DeviceArray<BlockOutcome> outcome;
    // update_batches' copy of the state before the call.
    DeviceArray<T> theta_before, J_before, meat_before;
    // What the blocks of the pipeline's multi-block d-sized kernels leave
    // for their last block, and the counters that find it (zeroed once,
    // zero between launches; objective.cuh's GridScratch).
    DeviceArray<double> grid_values;
    DeviceArray<unsigned> grid_counters;
    GridScratch grid_scratch() const { return GridScratch{grid_values.data(), grid_counters.data()}; }

    // Room for the state and work of d parameters (p features), and the
    // block solver's work arrays when `block_solver`; the grid counters
    // zeroed on `stream`.
    void reserve_parameters(int device, std::int64_t p, std::int64_t d, bool block_solver, cudaStream_t stream);
    // Room for a batch of n rows; `host_batch`: also its staging copy.
    void reserve_rows(int device, std::int64_t n, std::int64_t p, std::int64_t d, bool host_batch, bool unit_weights,
                      cudaStream_t stream);
    // Room for the meat of d parameters and a batch of n rows' weights.
    void reserve_meat(int device, std::int64_t n, std::int64_t d);
    // Room for update_batches' copy of the state (and of the meat when `meat`).
    void reserve_state_before(int device, std::int64_t d, bool meat);
    // LAMM's trial inputs: candidates, feature changes, intercept changes.
    T* trial_candidates() const { return trial_inputs.data(); }
    T* trial_feature_changes(std::int64_t d) const { return trial_inputs.data() + d * kLammTrialsPerPass; }
    T* trial_intercept_changes(std::int64_t p, std::int64_t d) const {
        return trial_feature_changes(d) + p * kLammTrialsPerPass;
    }

    std::int64_t allocations() const noexcept { return allocations_; }
    std::int64_t bytes() const noexcept;

private:
    template <class U>
    void grow(DeviceArray<U>& array, int device, std::int64_t count) {
        allocations_ += array.reserve(device, count);
    }
    // What row_arena holds now: rows, and whether the host batch's copies
    // (X, y, w) and the unit weights are among its arrays (once a batch
    // needed them they stay).
    struct RowLayout {
        std::int64_t rows = 0;
        bool host_batch = false, unit_weights = false;
    };
    RowLayout rows_placed_;
    std::int64_t allocations_ = 0;
    std::int64_t ones_filled_ = 0;
};

}  // namespace rh::cuda

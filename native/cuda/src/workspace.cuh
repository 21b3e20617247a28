// The CUDA engine's device buffers: the state (current and staged next),
// the batch's staging, the per-row and per-parameter work arrays and the
// reductions' partials. Sized by (rows, p, d) and grown only when a larger
// batch arrives, every growth counted: steady-state updates allocate
// nothing. Released with the engine.
#pragma once

#include <cstdint>

#include "block_solver.cuh"
#include "engine_internal.cuh"
#include "huber_kernels.cuh"
#include "objective.cuh"

namespace rh::cuda {

template <class T>
struct Workspace {
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
    // Per parameter: the iterate, step, gradient, X' s, penalty mask, history
    // direction; LAMM's trials (candidates d x trials, feature changes p x
    // trials, intercept changes); the Gram and the Newton matrix (d x d).
    DeviceArray<T> theta, step, gradient, product, mask, history, candidates, feature_changes, intercept_changes;
    DeviceArray<T> G, H;
    // Amendment 0002's majorizer: the Gram with the row weights (formed once
    // per batch, on first need) and the point its search starts from.
    DeviceArray<T> G_majorizer, search_start;
    // LAMM's accelerated phase: the previous iterate and the extrapolated point.
    DeviceArray<T> previous, extrapolated;
    // LAMM's trial scalars (4 x trials) and the reductions' partials.
    DeviceArray<double> trial_scalars, partials, sums, gram_partials;
    DeviceArray<IterationFlags> flags;
    // The block solver's (block_solver.cuh; only where d fits it): per block
    // the matrices, vectors, score sums and flags; the partial sums; its outcome.
    DeviceArray<T> block_matrices, block_vectors;
    DeviceArray<double> block_score_sums, block_partials;
    DeviceArray<IterationFlags> block_flags;
    DeviceArray<BlockOutcome> outcome;

    // Room for the state and work of d parameters (p features).
    void reserve_parameters(int device, std::int64_t p, std::int64_t d);
    // Room for a batch of n rows; `host_batch`: also its staging copy.
    void reserve_rows(int device, std::int64_t n, std::int64_t p, std::int64_t d, bool host_batch, bool unit_weights,
                      cudaStream_t stream);
    // Room for the meat of d parameters and a batch of n rows' weights.
    void reserve_meat(int device, std::int64_t n, std::int64_t d);
    LammTrials<T> lamm_trials() const;

    std::int64_t allocations() const noexcept { return allocations_; }
    std::int64_t bytes() const noexcept;

private:
    template <class U>
    void grow(DeviceArray<U>& array, int device, std::int64_t count) {
        allocations_ += array.reserve(device, count);
    }
    std::int64_t allocations_ = 0;
    std::int64_t ones_filled_ = 0;
};

}  // namespace rh::cuda

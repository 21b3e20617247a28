// The row passes that form X's products themselves for narrow X (p <=
// kRowProductColumns), eight lanes a row in the tensor-core Gram's layout,
// each in one launch and one read of X, r (or y) and w: the point pass
// (with the batch's value check), the line search's halvings and LAMM's
// trials. Their wider forms are cuBLAS's products followed by
// huber_kernels' passes, whose arithmetic per row they repeat.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "batch_constants.cuh"
#include "huber_kernels.cuh"

namespace rh::cuda {

// The eight lanes of a row form a product: each the products of its columns
// c, c + 8, ..., then a butterfly over the eight (every lane gets the same
// bits). cuBLAS sums the wider route's products in another order, so the
// two routes' last bits differ.
inline constexpr int kRowProductColumns = 64;  // (the refusals' messages name 64)

// The point pass's rows in one launch: r = y - (X point[:p] + b) (b =
// point[p] on the device or null), the partial sums of w loss(r) as
// launch_start_residual leaves them (one a block, row_blocks(n) blocks) and,
// with check_partials (not null), the batch check's partial sums of its X
// and y (kNonFiniteX, kNonFiniteY; the weights' sums zero: for a batch of
// unit weights), kBatchCheckSums a block.
template <class T>
void launch_start_rows(cudaStream_t stream, std::int64_t n, std::int64_t p, const T* X, const T* point, const T* b,
                       const T* y, const T* w, T tau, T* r, double* partials, double* check_partials);

// The halving pass's rows in one launch: dz = X step[:p] + b (b = step[p]
// on the device or null), written by one lane of the row, then the losses
// of launch_line_search_losses at the halvings (lane c of a row those with
// k = c mod 8). X, w and tau from `constants` when given (batch_constants.cuh).
template <class T>
void launch_step_line_search(cudaStream_t stream, std::int64_t n, std::int64_t p, const T* X, const T* step,
                             const T* b, const T* r, const T* w, T tau, T* dz, double* partials,
                             const BatchConstants<T>* constants = nullptr);

// LAMM's trial pass in one launch: the kLammTrialsPerPass trials' residuals
// r_k = r - (X Delta_k + b_k) (changes: p x kLammTrialsPerPass, column-major;
// b: the trials' intercept changes on the device or null), lane k of a row
// trial k's, written into trial_residuals (n x kLammTrialsPerPass,
// column-major) as launch_lamm_trials writes them, and their losses.
template <class T>
void launch_lamm_trial_rows(cudaStream_t stream, std::int64_t n, std::int64_t p, const T* X, const T* changes,
                            const T* b, const T* r, const T* w, T tau, T* trial_residuals, double* partials);

}  // namespace rh::cuda

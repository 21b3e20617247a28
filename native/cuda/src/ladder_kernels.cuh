// The solve ladder's kernels (linear_solver.cuh runs the ladder): the step
// from an inverted Newton matrix with its reciprocal condition number, the
// small-system Cholesky rung in one block, the minimum-norm steps from an
// SVD or a symmetric eigendecomposition, and the identity the inversions
// start from. Each writes its verdict into the iteration's flags.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "objective.cuh"

namespace rh::cuda {

// step = Hinv g when the factorization succeeded (*info == 0), the matrix is
// symmetric where that is required, rcond = 1 / (||H||_1 ||Hinv||_1) >
// eps * d and the step is finite; flags.step_ok says whether.
// `cholesky_inverse`: Hinv is potri's (the upper triangle of the inverse of
// a symmetric H, which is required); else a full inverse (LU's). Over 2
// ceil(d / kThreads) blocks (a thread a column, a thread a row), the last
// one deciding.
template <class T>
void launch_step_from_inverse(cudaStream_t stream, std::int64_t d, const T* Hinv, const T* g, const int* info,
                              bool cholesky_inverse, T* step, SystemFlags* flags, const GridScratch& scratch);

// The pipeline's small rung: one block of kRungThreads (the block solver
// keeps its kThreads: its blocks are the grid's). At d = 33 on an H100 a
// call took 24.9 us with 256 threads (up to 9 entries of the 48 x 48 layout
// a thread), 19.2 us with 1024 (up to 3) and 16.6 with the branch-free
// entry update (0ea996e's CUPTI tables). Nsight Compute then reads a steady
// 0.48 instructions issued a scheduler a cycle, so the rung's time follows
// its instruction count (docs/native-cuda.md, "The twenty-fifth session"):
// a form with each thread's entries in registers and the pivot's lines
// published in shared memory issued more of them and took 19.6 us (dropped).
inline constexpr int kRungThreads = 1024;

// The Cholesky rung for d <= kSmallSystem, as launch_step_from_inverse
// decides it (H symmetric, positive pivots, rcond > eps d, finite step).
template <class T>
void launch_small_cholesky_step(cudaStream_t stream, std::int64_t d, const T* H, const T* g, T* step,
                                SystemFlags* flags);

// The minimum-norm least-squares step from H = U S V' (gesvd): singular
// values below eps * d * s_max count as zero.
template <class T>
void launch_min_norm_step(cudaStream_t stream, std::int64_t d, const T* U, const T* S, const T* VT, const T* g,
                          const int* info, T* step, SystemFlags* flags);

// The same step from a symmetric H = Q diag(lambda) Q' (syevd: Q column-major,
// lambda ascending): |lambda| below eps * d * max |lambda| count as zero.
template <class T>
void launch_symmetric_min_norm_step(cudaStream_t stream, std::int64_t d, const T* Q, const T* lambda, const T* g,
                                    const int* info, T* step, SystemFlags* flags);

// out = I (d x d).
template <class T>
void launch_identity(cudaStream_t stream, std::int64_t d, T* out);

}  // namespace rh::cuda

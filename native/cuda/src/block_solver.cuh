// A whole batch solve in one thread block, for small batches: core's own
// drivers (core::damped_newton, core::lamm) run on the device over an
// evaluator whose passes over the rows the block makes together, then the
// batch is closed (J_next = J + Z' diag(w kappa(r_hat)) Z) in the same
// launch. One launch and one synchronization replace the multi-kernel
// pipeline's ten or so launches and one synchronization per iteration, which
// dominate an update of a few thousand rows (the latency class: 0.8-1.3 ms
// per update with the pipeline, most of it launch and wait).
//
// The block solver takes only what its shared memory and one
// multiprocessor serve well (block_solver_serves); a system its Cholesky
// rung refuses (the pipeline would go on to LU and SVD) ends the launch with
// `needs_pipeline`, and the engine solves the batch again with the pipeline.
// Nothing it writes is committed before the engine reads its outcome.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "objective.cuh"

namespace rh::cuda {

// The most parameters the block solver serves (its drivers' per-thread
// vectors), and the most row work: rows * d (d + 1) / 2, the multiply-adds
// of one Gram, which one multiprocessor does in about 10 us at the limit.
inline constexpr std::int64_t kBlockSolverParameters = 32;
inline constexpr std::int64_t kBlockSolverGramWork = std::int64_t{1} << 21;

inline bool block_solver_fits(std::int64_t d) { return d <= kBlockSolverParameters; }
inline bool block_solver_serves(std::int64_t rows, std::int64_t d) {
    return block_solver_fits(d) && rows * d * (d + 1) / 2 <= kBlockSolverGramWork;
}

// What the launch leaves for the host (device memory, then a pinned copy).
struct BlockOutcome {
    double objective = 0.0;  // F at theta_hat (without the L1 term)
    int iterations = 0;
    int converged = 0;
    int stop_reason = 0;  // core::StopReason
    int solve_route = 0;  // core::SolveRoute: the most robust route a system needed
    int cholesky_solves = 0;
    int majorizer_steps = 0;
    int needs_pipeline = 0;  // the Cholesky rung refused a system: nothing usable was written
};

// One batch's problem, as the kernel sees it. Work arrays: r and r_trial,
// s and c (n each), G, G_w, H (d x d), gradient, step (d), gx (p), one
// double (the score sum), flags.
template <class T>
struct BlockProblem {
    std::int64_t rows = 0, p = 0, d = 0;
    bool intercept = true;
    bool l1 = false;
    const T* X = nullptr;
    const T* y = nullptr;
    const T* w = nullptr;
    SurrogateTerms<T> terms;
    const T* mask = nullptr;
    T tau = T(0), h = T(0);
    double lambda_value = 0.0;
    int max_iter = 0;
    double tol = 0.0;
    T *r = nullptr, *r_trial = nullptr, *s = nullptr, *c = nullptr;
    T *G = nullptr, *G_w = nullptr, *H = nullptr, *gradient = nullptr, *step = nullptr, *gx = nullptr;
    double* score_sum = nullptr;
    IterationFlags* flags = nullptr;
    // Out: theta_hat and J_next (staged), the outcome.
    T* theta_next = nullptr;
    T* J_next = nullptr;
    BlockOutcome* outcome = nullptr;
};

template <class T>
void launch_block_solver(cudaStream_t stream, const BlockProblem<T>& problem);

}  // namespace rh::cuda

// A whole batch solve in one cooperative launch, for small batches: core's
// own drivers (core::damped_newton, core::lamm) run on the device, in the
// first warp of every block on the same values (the driver warp; each of
// its threads keeps its own copy of the driver's vectors), over an
// evaluator whose steps the driver warp posts to its block's mailbox and
// every thread of the grid runs together: passes over the rows (each block
// its share of the rows, its partial sums, a grid barrier, then every block
// adds the partials in block order: the same bits everywhere) and the
// d-sized work. Then the batch is closed
// (J_next = J + Z' diag(w kappa(r_hat)) Z, and the meat S_next = S +
// Z' diag(w score(r_hat)^2) Z when the engine tracks it) in the same launch. One launch
// and one synchronization replace the multi-kernel pipeline's ten or so
// launches and one synchronization per iteration, which dominate an update
// of a few thousand rows (the latency class: 0.8-1.3 ms per update with the
// pipeline, most of it launch and wait). The d-sized work (gradient,
// system, Cholesky rung) each block does for itself, in its own slice of
// the work arrays.
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

// The most parameters the block solver takes in `auto` (kBlockSolverParameters)
// and when an engine asks for it (SolverChoice::block: kBlockSolverWidest,
// a second kernel whose Cholesky arrays are in dynamic shared memory), the
// most blocks of its grid, and the most row work it takes in `auto`:
// rows * d (d + 1) / 2, the multiply-adds of one Gram.
inline constexpr std::int64_t kBlockSolverParameters = 32;
inline constexpr std::int64_t kBlockSolverWidest = 64;
inline constexpr int kBlockSolverGrid = 128;
inline constexpr std::int64_t kBlockSolverGramWork = std::int64_t{1} << 23;
// The rows of a tile: the block solver's passes give each warp whole tiles
// (block_rows.cuh), a lane a row.
inline constexpr int kTileRows = 32;

// Work arrays the block solver needs beyond the pipeline's (per block: the
// Gram, the majorizer's Gram and the system; gradient, step and Z' s; the
// flags and the score sum), its partial sums (two sets, alternated by pass:
// a block may start the next pass while another still reads this one's),
// then a pass's totals.
inline std::int64_t block_solver_matrices(std::int64_t d) { return kBlockSolverGrid * 3 * d * d; }
inline std::int64_t block_solver_vectors(std::int64_t d) { return kBlockSolverGrid * 3 * d; }
inline std::int64_t block_solver_pass_partials(std::int64_t d) {
    return 2 * static_cast<std::int64_t>(kBlockSolverGrid) * (1 + d + d * (d + 1) / 2);
}
inline std::int64_t block_solver_partials(std::int64_t d) { return block_solver_pass_partials(d) + d + d * (d + 1) / 2; }

// d the block solver can take when an engine asks for it, and a batch `auto` gives it.
inline bool block_solver_fits(std::int64_t d) { return d <= kBlockSolverWidest; }
inline bool block_solver_serves(std::int64_t rows, std::int64_t d) {
    return d <= kBlockSolverParameters && rows * d * (d + 1) / 2 <= kBlockSolverGramWork;
}
// Whether an engine of d parameters may run the block solver (its work
// arrays are reserved with the engine's): `asked` when it asks for it.
inline bool block_solver_may_run(bool asked, std::int64_t d) {
    return asked ? block_solver_fits(d) : d <= kBlockSolverParameters;
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
    int non_finite = 0;      // check_values: X (1) or y (2) holds a NaN or an infinity; nothing was solved
};

// One batch's problem, as the kernel sees it. Work arrays: r and r_trial,
// s and c (n each); per block (block_solver_* sizes) the matrices, vectors,
// flags and score sums; the partial sums.
template <class T>
struct BlockProblem {
    int blocks = 1;  // the grid (every block resident: a cooperative launch)
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
    bool check_values = false;  // the batch's value check in the launch (the engine's otherwise)
    T *r = nullptr, *r_trial = nullptr, *s = nullptr, *c = nullptr;
    T* matrices = nullptr;   // block_solver_matrices(d)
    T* vectors = nullptr;    // block_solver_vectors(d)
    double* score_sums = nullptr;  // kBlockSolverGrid
    SystemFlags* flags = nullptr;  // kBlockSolverGrid
    double* partials = nullptr;  // block_solver_partials(d)
    double* totals = nullptr;    // d + d (d + 1) / 2: a pass's sums over the blocks
    // The meat when the engine tracks it (amendment 0003): the committed one
    // in, the next out (staged), both null otherwise.
    const T* meat_current = nullptr;
    T* meat_next = nullptr;
    // Out: theta_hat and J_next (staged), the outcome.
    T* theta_next = nullptr;
    T* J_next = nullptr;
    BlockOutcome* outcome = nullptr;
};

// The most blocks of the block solver resident at once on `device` (its
// occupancy; a cooperative launch needs them all resident), at most
// kBlockSolverGrid; and the grid for a batch of `rows`: that many, no more
// than the batch's tiles of rows.
// `tiles_per_block`: the tiles of kTileRows rows each block takes at least
// (fewer blocks: cheaper grid barriers, longer passes).
template <class T>
int block_solver_capacity(int device, std::int64_t d);
int block_solver_grid(int capacity, std::int64_t rows, int tiles_per_block);
// The tiles per block when the engine options leave it to the engine
// (EngineOptions::block_tiles, a calibration knob).
inline constexpr int kBlockSolverTilesPerBlock = 1;

template <class T>
void launch_block_solver(cudaStream_t stream, const BlockProblem<T>& problem);

}  // namespace rh::cuda

#include "block_solver.cuh"

#include <cooperative_groups.h>

#include <string>

#include "core/huber.hpp"
#include "core/lamm_driver.hpp"
#include "core/newton_driver.hpp"
#include "core/vector_sums.hpp"
#include "engine_internal.cuh"
#include "gram_tiles.cuh"
#include "launch.cuh"
#include "objective_device.cuh"
#include "phase_clocks.cuh"

namespace rh::cuda {

namespace {

// The sum over the grid's blocks of value `offset` of each block's partials
// (`stride` apart), by one warp: lane l adds blocks l, l + 32, ... in order,
// then the lanes in a fixed shuffle tree. Every warp that calls it gets the
// same bits; every lane gets the sum.
__device__ inline double warp_sum_over_blocks(const double* sums, std::int64_t stride, std::int64_t offset,
                                              int blocks) {
    double value = 0.0;
    for (int b = threadIdx.x & 31; b < blocks; b += 32) value += sums[b * stride + offset];
    for (int shift = 16; shift > 0; shift >>= 1) value += __shfl_down_sync(0xffffffffu, value, shift);
    return __shfl_sync(0xffffffffu, value, 0);
}

// The passes over the batch's rows, every thread of the grid together, and
// this block's slices of the work arrays. The drivers' vectors (a point, a
// step) are each thread's own copy: the drivers run in every thread on the
// same values and take the same branches.
template <class T>
struct BlockRows {
    const BlockProblem<T>& problem;
    int pass = 0;  // alternates the partial sums' two sets
    PhaseClocks clocks;  // profiling builds only (phase_clocks.cuh)

    __device__ std::int64_t entries() const { return problem.d * (problem.d + 1) / 2; }
    __device__ T* G() const { return problem.matrices + (3 * blockIdx.x) * problem.d * problem.d; }
    __device__ T* G_w() const { return G() + problem.d * problem.d; }
    __device__ T* H() const { return G_w() + problem.d * problem.d; }
    __device__ T* gradient() const { return problem.vectors + (3 * blockIdx.x) * problem.d; }
    __device__ T* step() const { return gradient() + problem.d; }
    __device__ T* gx() const { return step() + problem.d; }
    __device__ double* score_sum() const { return problem.score_sums + blockIdx.x; }
    __device__ SystemFlags* flags() const { return problem.flags + blockIdx.x; }

    // This pass's partial sums: per block, the loss, Z' s (d) and the Gram's entries.
    __device__ double* partials() {
        return problem.partials + (pass++ & 1) * static_cast<std::int64_t>(kBlockSolverGrid) * per_block();
    }
    __device__ std::int64_t per_block() const { return 1 + problem.d + entries(); }

    // r_out = y - Z point; returns sum_i w_i loss(r_out_i) (block partials in block order).
    __device__ double residual(const T* point, T* r_out) {
        const BlockProblem<T>& P = problem;
        const T intercept = P.intercept ? point[P.p] : T(0);
        const T half_tau_squared = (T(0.5) * P.tau) * P.tau;
        double loss = 0.0;
        {
            const PhaseTimer timer(clocks, Phase::residual_rows);
            for (std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < P.rows;
                 i += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
                const T* x = P.X + i * P.p;
                T fitted = T(0);
                for (std::int64_t j = 0; j < P.p; ++j) fitted = fma(x[j], point[j], fitted);
                const T ri = P.y[i] - (fitted + intercept);
                r_out[i] = ri;
                loss += static_cast<double>(P.w[i] * core::huber_loss_fast(ri, P.tau, half_tau_squared));
            }
        }
        const PhaseTimer timer(clocks, Phase::residual_sum);
        double* sums = partials();
        loss = block_sum(loss);
        if (threadIdx.x == 0) sums[blockIdx.x * per_block()] = loss;
        cooperative_groups::this_grid().sync();  // publishes r_out and the partials to the grid
        return warp_sum_over_blocks(sums, per_block(), 0, gridDim.x);  // every warp alike
    }

    // From the residual r: s = w score(r), and the rows' weights of the Gram
    // (c = w kappa(r) with `curvature`, or the row weights w with
    // `row_weights`; no Gram with neither), for this block's tiles; then
    // Z' s into gx and score_sum and the Gram into G_out (this block's
    // slice), added over the grid.
    __device__ void score(const T* r, bool curvature, bool row_weights, T* G_out) {
        const BlockProblem<T>& P = problem;
        const T inverse_two_h = T(1) / (T(2) * P.h);
        const std::int64_t tiles = (P.rows + kTileRows - 1) / kTileRows;
        {
            const PhaseTimer timer(clocks, Phase::score_rows);
            for (std::int64_t t = blockIdx.x; t < tiles; t += gridDim.x) {
                for (std::int64_t i = t * kTileRows + threadIdx.x; i < P.rows && i < (t + 1) * kTileRows;
                     i += blockDim.x) {
                    const T ri = r[i], wi = P.w[i];
                    P.s[i] = wi * core::huber_score(ri, P.tau);
                    if (curvature) P.c[i] = wi * core::smoothed_curvature_fast(ri, P.tau, P.h, inverse_two_h);
                }
            }
            __syncthreads();  // this block's tiles' s and c, read by this block only
        }
        const T* weights = curvature ? P.c : (row_weights ? P.w : nullptr);
        const int d = static_cast<int>(P.d);
        GramEntries owned(d);
        double product = 0.0;
        {
            const PhaseTimer timer(clocks, Phase::gram_tiles);
            accumulate_gram_tiles<T, kBlockSolverParameters>(P.rows, P.p, P.intercept, P.X, weights, P.s,
                                                              blockIdx.x, gridDim.x, owned, product);
        }
        const PhaseTimer timer(clocks, Phase::gram_sum);
        double* sums = partials();
        double* mine = sums + blockIdx.x * per_block();
        if (threadIdx.x < d) mine[1 + threadIdx.x] = product;
        if (weights != nullptr)
            for (int o = 0, e = threadIdx.x; o < owned.owned; ++o, e += blockDim.x) mine[1 + d + e] = owned.sums[o];
        // The totals: each by one warp of the grid (warp_sum_over_blocks), then
        // read by every block.
        auto grid = cooperative_groups::this_grid();
        grid.sync();
        const int count = d + (weights != nullptr ? static_cast<int>(entries()) : 0);
        const int warp = static_cast<int>(blockIdx.x) * kWarps + static_cast<int>(threadIdx.x >> 5);
        for (int k = warp; k < count; k += static_cast<int>(gridDim.x) * kWarps) {
            const double total = warp_sum_over_blocks(sums, per_block(), 1 + k, gridDim.x);
            if ((threadIdx.x & 31) == 0) P.totals[k] = total;
        }
        grid.sync();
        for (int j = threadIdx.x; j < d; j += blockDim.x) {
            if (j < P.p) gx()[j] = static_cast<T>(P.totals[j]);
            else *score_sum() = P.totals[j];
        }
        if (!P.intercept && threadIdx.x == 0) *score_sum() = 0.0;
        if (weights != nullptr) {
            for (int e = threadIdx.x; e < static_cast<int>(entries()); e += blockDim.x) {
                int a, c;
                entry_pair(e, d, a, c);
                G_out[a + static_cast<std::int64_t>(c) * d] = static_cast<T>(P.totals[d + e]);
            }
        }
        __syncthreads();
    }

    // F = loss / N + the memory part, at a point whose residual was just formed.
    __device__ double objective(double data, const T* point) const {
        return data / problem.terms.weight_sum + memory_value(problem.terms, point);
    }

    // grad f at `point` from the scores of the current residual (Z' s formed).
    __device__ void gradient_at(const T* point) const {
        gradient_into(problem.terms, point, gx(), score_sum(), 1, gradient());
    }
};

template <class T>
__device__ void swap_rows(T*& a, T*& b) {
    T* const kept = a;
    a = b;
    b = kept;
}

// core::damped_newton's evaluator: the Newton system from one pass (scores,
// curvature, Gram, Z' s), the Cholesky rung in shared memory, one pass per
// trial. A system the rung refuses sets `refused`: the step is zero from
// then on (the driver stops at once) and the engine runs the pipeline.
template <class T>
struct BlockNewtonEvaluator {
    BlockRows<T>& rows;
    T* r;
    T* r_trial;
    bool majorizer_gram = false;
    bool refused = false;

    __device__ double start(const T* theta) { return rows.objective(rows.residual(theta, r), theta); }

    __device__ core::SolveRoute direction(const T* theta, T* step) {
        rows.score(r, true, false, rows.G());
        rows.gradient_at(theta);
        return solve(rows.G(), step);
    }

    __device__ core::SolveRoute majorizer_direction(const T*, T* step) {
        if (!majorizer_gram) {
            rows.score(r, false, true, rows.G_w());  // Z' s again (unchanged): the Gram with the row weights
            majorizer_gram = true;
        }
        return solve(rows.G_w(), step);  // with the gradient direction() formed
    }

    __device__ core::SolveRoute solve(const T* G, T* step) {
        const BlockProblem<T>& P = rows.problem;
        {
            const PhaseTimer timer(rows.clocks, Phase::system);
            assemble_system_matrix(P.terms, G, rows.H(), rows.flags());
            __syncthreads();
        }
        {
            const PhaseTimer timer(rows.clocks, Phase::cholesky);
            small_cholesky_step<T, kBlockSolverParameters>(P.d, rows.H(), rows.gradient(), rows.step(),
                                                           rows.flags());
            __syncthreads();
        }
        refused = refused || rows.flags()->step_ok == 0;
        for (std::int64_t j = 0; j < P.d; ++j) step[j] = refused ? T(0) : rows.step()[j];
        __syncthreads();  // every thread has read flags and step before they change
        return core::SolveRoute::cholesky;
    }

    __device__ double trial(double, const T* candidate, double, const core::SearchSteps<T>&) {
        return rows.objective(rows.residual(candidate, r_trial), candidate);
    }

    __device__ double accept(double, const T*, double trial_value) {
        swap_rows(r, r_trial);
        return trial_value;
    }

    __device__ double norm(const T* x) const { return core::index_order_norm(rows.problem.d, x); }
};

// core::lamm's evaluator: the gradient from one pass (scores, Z' s), one
// pass per trial.
template <class T>
struct BlockLammEvaluator {
    BlockRows<T>& rows;
    T* r;
    T* r_trial;

    __device__ double start(const T* theta) { return rows.objective(rows.residual(theta, r), theta); }
    __device__ double move_to(const T* point, const T*) { return start(point); }

    __device__ void gradient(const T* point, T* g) {
        rows.score(r, false, false, nullptr);
        rows.gradient_at(point);
        for (std::int64_t j = 0; j < rows.problem.d; ++j) g[j] = rows.gradient()[j];
        __syncthreads();
    }

    // a' b and ||x||_2 in double, index order: each thread on its own copy.
    __device__ double dot(const T* a, const T* b) const { return core::index_order_dot(rows.problem.d, a, b); }
    __device__ double norm(const T* x) const { return core::index_order_norm(rows.problem.d, x); }

    __device__ double trial(const T* candidate, const T*, double, const core::LammProposal<T>&) {
        return rows.objective(rows.residual(candidate, r_trial), candidate);
    }

    __device__ void accept() { swap_rows(r, r_trial); }
};

template <class T>
__global__ void __launch_bounds__(kThreads) block_solver_kernel(const BlockProblem<T> problem) {
    const BlockProblem<T>& P = problem;
    T theta[kBlockSolverParameters], candidate[kBlockSolverParameters], step[kBlockSolverParameters];
    T gradient[kBlockSolverParameters], previous[kBlockSolverParameters], extrapolated[kBlockSolverParameters];
    const core::DriverBuffers<T> buffers{theta, candidate, step, gradient, previous, extrapolated};
    BlockRows<T> rows{P};
    rows.clocks.start();
    core::UpdateDiagnostics diagnostics;
    core::SolverResult<T> result;
    bool refused = false;
    if (P.l1) {
        BlockLammEvaluator<T> evaluator{rows, P.r, P.r_trial};
        result = core::lamm(evaluator, P.d, P.terms.theta_prev, P.mask, P.lambda_value, P.max_iter, P.tol, buffers);
    } else {
        BlockNewtonEvaluator<T> evaluator{rows, P.r, P.r_trial};
        result = core::damped_newton(evaluator, P.d, P.terms.theta_prev, P.max_iter, P.tol, buffers, diagnostics);
        refused = evaluator.refused;
    }
    rows.clocks.driver_done();
    BlockOutcome outcome;
    if (refused) {
        outcome.needs_pipeline = 1;
        if (blockIdx.x == 0 && threadIdx.x == 0) *P.outcome = outcome;
        return;
    }
    // Closing the batch: the residual at theta_hat, the curvature Gram there
    // (block 0 writes what every block formed alike).
    rows.residual(result.theta, P.r);
    rows.score(P.r, true, false, rows.G());
    rows.clocks.report(P.rows, P.d, static_cast<int>(sizeof(T)), P.l1 ? 1 : 0, static_cast<int>(gridDim.x),
                       result.iterations);
    if (blockIdx.x != 0) return;
    for (std::int64_t e = threadIdx.x; e < P.d * P.d; e += blockDim.x) {
        const std::int64_t i = e / P.d, j = e - i * P.d;  // row-major
        P.J_next[e] = P.terms.information[e] + gram_at(rows.G(), P.d, i, j);
    }
    for (std::int64_t j = threadIdx.x; j < P.d; j += blockDim.x) P.theta_next[j] = result.theta[j];
    if (threadIdx.x == 0) {
        outcome.objective = result.objective;
        outcome.iterations = result.iterations;
        outcome.converged = result.converged ? 1 : 0;
        outcome.stop_reason = static_cast<int>(result.reason);
        outcome.solve_route = static_cast<int>(diagnostics.solve_route);
        outcome.cholesky_solves = diagnostics.cholesky_solves;
        outcome.majorizer_steps = diagnostics.majorizer_steps;
        *P.outcome = outcome;
    }
}

}  // namespace

template <class T>
int block_solver_capacity(int device) {
    int per_multiprocessor = 0, multiprocessors = 0;
    RH_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_multiprocessor, block_solver_kernel<T>,
                                                                kThreads, 0));
    RH_CUDA_CHECK(cudaDeviceGetAttribute(&multiprocessors, cudaDevAttrMultiProcessorCount, device));
    const int resident = per_multiprocessor * multiprocessors;
    return resident < kBlockSolverGrid ? (resident < 1 ? 1 : resident) : kBlockSolverGrid;
}

int block_solver_grid(int capacity, std::int64_t rows, int tiles_per_block) {
    const std::int64_t tiles = (rows + kTileRows - 1) / kTileRows;
    const std::int64_t wanted = (tiles + tiles_per_block - 1) / tiles_per_block;
    return static_cast<int>(wanted < capacity ? (wanted < 1 ? 1 : wanted) : capacity);
}

template <class T>
void launch_block_solver(cudaStream_t stream, const BlockProblem<T>& problem) {
    BlockProblem<T> argument = problem;
    void* arguments[] = {&argument};
    RH_CUDA_CHECK(cudaLaunchCooperativeKernel(reinterpret_cast<const void*>(&block_solver_kernel<T>),
                                              dim3(problem.blocks), dim3(kThreads), arguments, 0, stream));
}

template int block_solver_capacity<float>(int);
template int block_solver_capacity<double>(int);
template void launch_block_solver<float>(cudaStream_t, const BlockProblem<float>&);
template void launch_block_solver<double>(cudaStream_t, const BlockProblem<double>&);

}  // namespace rh::cuda

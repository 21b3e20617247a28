#include "block_solver.cuh"

#include <string>

#include "block_barrier.cuh"
#include "block_rows.cuh"
#include "core/lamm_driver.hpp"
#include "core/newton_driver.hpp"
#include "core/vector_sums.hpp"
#include "engine_internal.cuh"
#include "launch.cuh"

namespace rh::cuda {

namespace {

template <class U>
__device__ void swap_rows(U*& a, U*& b) {
    U* const kept = a;
    a = b;
    b = kept;
}

// What the driver warp asks of its block: the evaluators' steps, each made
// by every thread of the grid together.
enum class BlockCommand : int {
    value_at,          // F at `point`, its residual into `r`
    newton_system,     // from the residual `r`: scores, curvature Gram, gradient at `point`, the system's step
    majorizer_system,  // the majorizer's step (the row-weighted Gram first when `form_gram`)
    lamm_gradient,     // from the residual `r`: scores, the gradient at `point`
    close,             // the batch's closing at `point` (theta_hat): its residual, curvature Gram and meat's
    stop,              // the Cholesky rung refused a system: nothing to close
};

// The command in the block's shared memory: written by the driver warp,
// read by every thread after the handoff barrier.
template <class T, int Widest>
struct BlockMailbox {
    BlockCommand command;
    T* r;
    bool form_gram;
    T point[Widest];
};

// The barrier between the driver warp, which reaches it from inside the
// driver, and the block's other warps, which reach it from their serving
// loop: a named barrier (1) without .aligned, so its threads may arrive
// from different instructions.
__device__ inline void handoff() { asm volatile("barrier.sync 1, %0;" ::"r"(static_cast<int>(blockDim.x)) : "memory"); }

// One command, by every thread of the block (one copy of the code, so the
// block barriers inside are the same instructions whoever called it); its
// value (value_at: F) in every thread. It ends with a block barrier: every
// thread has read the mailbox before the driver warp writes it again.
template <class T, int Widest>
__device__ __noinline__ double run_command(BlockRows<T, Widest>& rows, const BlockMailbox<T, Widest>& box) {
    double value = 0.0;
    switch (box.command) {
        case BlockCommand::value_at:
            value = rows.objective(rows.residual(box.point, box.r), box.point);
            break;
        case BlockCommand::newton_system:
            rows.score(box.r, GramWeights::curvature, rows.G());
            rows.gradient_at(box.point);
            rows.solve_system(rows.G());
            break;
        case BlockCommand::majorizer_system:
            if (box.form_gram) rows.score(box.r, GramWeights::rows, rows.G_w());  // Z' s again (unchanged) and G_w
            rows.solve_system(rows.G_w());  // with the gradient newton_system formed
            break;
        case BlockCommand::lamm_gradient:
            rows.score(box.r, GramWeights::none, nullptr);
            rows.gradient_at(box.point);
            break;
        case BlockCommand::close:
            rows.residual(box.point, rows.problem.r);
            rows.score(rows.problem.r, GramWeights::curvature, rows.G());
            // The meat's Gram at theta_hat too (into G_w, free by now), when the engine tracks it.
            if (rows.problem.meat_next != nullptr) rows.score(rows.problem.r, GramWeights::meat, rows.G_w());
            break;
        case BlockCommand::stop:
            break;
    }
    const PhaseTimer timer(rows.clocks, Phase::command_end);
    block_barrier();
    return value;
}

// The driver warp's side: core's driver runs in the 32 threads of warp 0 on
// the same values (each thread its own copy of the driver's vectors), and
// each evaluator step is posted to the block's mailbox and run by all.
template <class T, int Widest>
struct DriverWarp {
    BlockRows<T, Widest>& rows;
    BlockMailbox<T, Widest>& box;

    __device__ double ask(BlockCommand command, const T* point, T* r, bool form_gram = false) {
        {
            const PhaseTimer timer(rows.clocks, Phase::handoff);
            __syncwarp();
            if (point != nullptr)
                for (std::int64_t j = threadIdx.x; j < rows.problem.d; j += 32) box.point[j] = point[j];
            if (threadIdx.x == 0) {
                box.command = command;
                box.r = r;
                box.form_gram = form_gram;
            }
            __syncwarp();
            handoff();
        }
        return run_command(rows, box);
    }
};

// The other warps: each command as the driver warp posts it, until the last.
template <class T, int Widest>
__device__ void serve(BlockRows<T, Widest>& rows, const BlockMailbox<T, Widest>& box) {
    for (;;) {
        handoff();
        const BlockCommand command = box.command;
        run_command(rows, box);
        if (command == BlockCommand::close || command == BlockCommand::stop) return;
    }
}

// core::damped_newton's evaluator (the driver warp's): the Newton system
// from one pass (scores, curvature, Gram, Z' s), the Cholesky rung in shared
// memory, one pass per trial. A system the rung refuses sets `refused`: the
// step is zero from then on (the driver stops at once) and the engine runs
// the pipeline.
template <class T, int Widest>
struct BlockNewtonEvaluator {
    DriverWarp<T, Widest>& warp;
    T* r;
    T* r_trial;
    bool majorizer_gram = false;
    bool refused = false;

    __device__ double start(const T* theta) { return warp.ask(BlockCommand::value_at, theta, r); }

    __device__ core::SolveRoute direction(const T* theta, T* step) {
        warp.ask(BlockCommand::newton_system, theta, r);
        return take_step(step);
    }

    __device__ core::SolveRoute majorizer_direction(const T*, T* step) {
        warp.ask(BlockCommand::majorizer_system, nullptr, r, !majorizer_gram);
        majorizer_gram = true;
        return take_step(step);
    }

    __device__ core::SolveRoute take_step(T* step) {
        const PhaseTimer timer(warp.rows.clocks, Phase::driver_reads);
        refused = refused || warp.rows.flags()->step_ok == 0;
        for (std::int64_t j = 0; j < warp.rows.problem.d; ++j) step[j] = refused ? T(0) : warp.rows.step()[j];
        return core::SolveRoute::cholesky;
    }

    __device__ double trial(double, const T* candidate, double, const core::SearchSteps<T>&) {
        return warp.ask(BlockCommand::value_at, candidate, r_trial);
    }

    __device__ double accept(double, const T*, double trial_value) {
        swap_rows(r, r_trial);
        return trial_value;
    }

    __device__ double norm(const T* x) const {
        const PhaseTimer timer(warp.rows.clocks, Phase::driver_sums);
        return core::index_order_norm(warp.rows.problem.d, x);
    }
};

// core::lamm's evaluator (the driver warp's): the gradient from one pass
// (scores, Z' s), one pass per trial.
template <class T, int Widest>
struct BlockLammEvaluator {
    DriverWarp<T, Widest>& warp;
    T* r;
    T* r_trial;

    __device__ double start(const T* theta) { return warp.ask(BlockCommand::value_at, theta, r); }
    __device__ double move_to(const T* point, const T*) { return start(point); }

    __device__ void gradient(const T* point, T* g) {
        warp.ask(BlockCommand::lamm_gradient, point, r);
        const PhaseTimer timer(warp.rows.clocks, Phase::driver_reads);
        for (std::int64_t j = 0; j < warp.rows.problem.d; ++j) g[j] = warp.rows.gradient()[j];
    }

    // a' b and ||x||_2 in double, index order: each thread on its own copy.
    __device__ double dot(const T* a, const T* b) const {
        const PhaseTimer timer(warp.rows.clocks, Phase::driver_sums);
        return core::index_order_dot(warp.rows.problem.d, a, b);
    }
    __device__ double norm(const T* x) const {
        const PhaseTimer timer(warp.rows.clocks, Phase::driver_sums);
        return core::index_order_norm(warp.rows.problem.d, x);
    }

    __device__ double trial(const T* candidate, const T*, double, const core::LammProposal<T>&) {
        return warp.ask(BlockCommand::value_at, candidate, r_trial);
    }

    __device__ void accept() { swap_rows(r, r_trial); }
};

// The problem stays in parameter space (__grid_constant__): every thread's
// BlockRows refers to it, through run_command's call, without a copy in
// local memory. One block a multiprocessor (the cooperative grid is at most
// kBlockSolverGrid blocks): without the bound, nvcc gave the float32
// d <= 32 kernel 128 registers and 3.4 KB of spills to fit two.
template <class T, int Widest>
__global__ void __launch_bounds__(kThreads, 1) block_solver_kernel(__grid_constant__ const BlockProblem<T> problem) {
    const BlockProblem<T>& P = problem;
    __shared__ BlockMailbox<T, Widest> box;
    BlockRows<T, Widest> rows{P};
    rows.clocks.start();
    if (P.check_values) {  // every thread of the grid sees the same counts
        double in_X = 0.0, in_y = 0.0;
        {
            const PhaseTimer timer(rows.clocks, Phase::value_check);
            rows.count_non_finite(in_X, in_y);
        }
        if (in_X > 0.0 || in_y > 0.0) {
            if (blockIdx.x == 0 && threadIdx.x == 0) {
                BlockOutcome refused;
                refused.non_finite = in_X > 0.0 ? 1 : 2;
                *P.outcome = refused;
            }
            return;
        }
    }
    core::UpdateDiagnostics diagnostics;
    core::SolverResult<T> result;
    if (threadIdx.x < 32) {  // the driver warp
        T theta[Widest], candidate[Widest], step[Widest];
        T gradient[Widest], previous[Widest], extrapolated[Widest];
        const core::DriverBuffers<T> buffers{theta, candidate, step, gradient, previous, extrapolated};
        DriverWarp<T, Widest> warp{rows, box};
        bool refused = false;
        if (P.l1) {
            BlockLammEvaluator<T, Widest> evaluator{warp, P.r, P.r_trial};
            result = core::lamm(evaluator, P.d, P.terms.theta_prev, P.mask, P.lambda_value, P.max_iter, P.tol,
                                buffers);
        } else {
            BlockNewtonEvaluator<T, Widest> evaluator{warp, P.r, P.r_trial};
            result = core::damped_newton(evaluator, P.d, P.terms.theta_prev, P.max_iter, P.tol, buffers,
                                         diagnostics);
            refused = evaluator.refused;
        }
        rows.clocks.driver_done();
        // The last command: the closing at theta_hat (into the mailbox), or
        // stop. (result.theta points into this branch's arrays: after it,
        // theta_hat is read from the mailbox.)
        warp.ask(refused ? BlockCommand::stop : BlockCommand::close, refused ? nullptr : result.theta, nullptr);
    } else {
        serve(rows, box);
    }
    // Every thread has run the last command (stop or close) and reads it
    // back; the mailbox holds theta_hat after a close.
    BlockOutcome outcome;
    if (box.command == BlockCommand::stop) {
        outcome.needs_pipeline = 1;
        if (blockIdx.x == 0 && threadIdx.x == 0) *P.outcome = outcome;
        return;
    }
    rows.clocks.report(P.rows, P.d, static_cast<int>(sizeof(T)), P.l1 ? 1 : 0, static_cast<int>(gridDim.x),
                       result.iterations);
    if (blockIdx.x != 0) return;  // (block 0 writes what every block formed alike)
    for (std::int64_t e = threadIdx.x; e < P.d * P.d; e += blockDim.x) {
        const std::int64_t i = e / P.d, j = e - i * P.d;  // row-major
        P.J_next[e] = P.terms.information[e] + gram_at(rows.G(), P.d, i, j);
        if (P.meat_next != nullptr) P.meat_next[e] = P.meat_current[e] + gram_at(rows.G_w(), P.d, i, j);
    }
    for (std::int64_t j = threadIdx.x; j < P.d; j += blockDim.x) P.theta_next[j] = box.point[j];
    if (threadIdx.x == 0) {  // a thread of the driver warp: the driver's result
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

// The dynamic shared memory of the kernel for d <= Widest: the Cholesky
// rung's arrays past kBlockSolverParameters, none below.
template <class T, int Widest>
constexpr int block_dynamic_bytes() {
    return Widest > kBlockSolverParameters ? static_cast<int>(sizeof(CholeskyShared<T, Widest>)) : 0;
}

template <class T, int Widest>
int capacity_of(int device) {
    const void* kernel = reinterpret_cast<const void*>(&block_solver_kernel<T, Widest>);
    constexpr int bytes = block_dynamic_bytes<T, Widest>();
    if (bytes > 0) RH_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, bytes));
    int per_multiprocessor = 0, multiprocessors = 0;
    RH_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_multiprocessor, kernel, kThreads, bytes));
    RH_CUDA_CHECK(cudaDeviceGetAttribute(&multiprocessors, cudaDevAttrMultiProcessorCount, device));
    const int resident = per_multiprocessor * multiprocessors;
    return resident < kBlockSolverGrid ? (resident < 1 ? 1 : resident) : kBlockSolverGrid;
}

template <class T, int Widest>
void launch_for(cudaStream_t stream, const BlockProblem<T>& problem) {
    BlockProblem<T> argument = problem;
    void* arguments[] = {&argument};
    RH_CUDA_CHECK(cudaLaunchCooperativeKernel(reinterpret_cast<const void*>(&block_solver_kernel<T, Widest>),
                                              dim3(problem.blocks), dim3(kThreads), arguments,
                                              block_dynamic_bytes<T, Widest>(), stream));
}

}  // namespace

template <class T>
int block_solver_capacity(int device, std::int64_t d) {
    return d <= kBlockSolverParameters ? capacity_of<T, kBlockSolverParameters>(device)
                                       : capacity_of<T, kBlockSolverWidest>(device);
}

int block_solver_grid(int capacity, std::int64_t rows, int tiles_per_block) {
    const std::int64_t tiles = (rows + kTileRows - 1) / kTileRows;
    const std::int64_t wanted = (tiles + tiles_per_block - 1) / tiles_per_block;
    return static_cast<int>(wanted < capacity ? (wanted < 1 ? 1 : wanted) : capacity);
}

template <class T>
void launch_block_solver(cudaStream_t stream, const BlockProblem<T>& problem) {
    if (problem.d <= kBlockSolverParameters)
        launch_for<T, kBlockSolverParameters>(stream, problem);
    else
        launch_for<T, kBlockSolverWidest>(stream, problem);
}

template int block_solver_capacity<float>(int, std::int64_t);
template int block_solver_capacity<double>(int, std::int64_t);
template void launch_block_solver<float>(cudaStream_t, const BlockProblem<float>&);
template void launch_block_solver<double>(cudaStream_t, const BlockProblem<double>&);

}  // namespace rh::cuda

#include "block_solver.cuh"

#include "core/huber.hpp"
#include "core/lamm_driver.hpp"
#include "core/newton_driver.hpp"
#include "engine_internal.cuh"
#include "gram_tiles.cuh"
#include "launch.cuh"
#include "objective_device.cuh"

namespace rh::cuda {

namespace {

// The passes over the batch's rows, every thread of the block together.
// The drivers' vectors (a point, a step) are each thread's own copy: the
// drivers run in every thread on the same values and take the same branches.
template <class T>
struct BlockRows {
    const BlockProblem<T>& problem;

    // r_out = y - Z point; returns sum_i w_i loss(r_out_i) (block order).
    __device__ double residual(const T* point, T* r_out) const {
        const BlockProblem<T>& P = problem;
        const T intercept = P.intercept ? point[P.p] : T(0);
        const T half_tau_squared = (T(0.5) * P.tau) * P.tau;
        double loss = 0.0;
        for (std::int64_t i = threadIdx.x; i < P.rows; i += blockDim.x) {
            const T* x = P.X + i * P.p;
            T fitted = T(0);
            for (std::int64_t j = 0; j < P.p; ++j) fitted = fma(x[j], point[j], fitted);
            const T ri = P.y[i] - (fitted + intercept);
            r_out[i] = ri;
            loss += static_cast<double>(P.w[i] * core::huber_loss_fast(ri, P.tau, half_tau_squared));
        }
        return block_sum(loss);  // its barriers publish r_out to the block
    }

    // s = w score(r) (and c = w kappa(r) with `curvature`), then Z' s into
    // gx and score_sum (and G = Z' diag(c) Z).
    __device__ void score(const T* r, bool curvature) const {
        const BlockProblem<T>& P = problem;
        const T inverse_two_h = T(1) / (T(2) * P.h);
        for (std::int64_t i = threadIdx.x; i < P.rows; i += blockDim.x) {
            const T ri = r[i], wi = P.w[i];
            P.s[i] = wi * core::huber_score(ri, P.tau);
            if (curvature) P.c[i] = wi * core::smoothed_curvature_fast(ri, P.tau, P.h, inverse_two_h);
        }
        __syncthreads();
        gram(curvature ? P.c : nullptr, P.s, P.G);
    }

    // G_out = Z' diag(weights) Z (upper triangle, column-major) unless
    // weights is null; Z' s into gx and score_sum when s is not null.
    __device__ void gram(const T* weights, const T* s, T* G_out) const {
        const BlockProblem<T>& P = problem;
        const int d = static_cast<int>(P.d);
        GramEntries entries(d);
        double product = 0.0;
        accumulate_gram_tiles<T, kBlockSolverParameters>(P.rows, P.p, P.intercept, P.X, weights, s, 0, 1, entries, product);
        if (weights != nullptr)
            for (int o = 0; o < entries.owned; ++o)
                G_out[entries.a[o] + static_cast<std::int64_t>(entries.b[o]) * d] = static_cast<T>(entries.sums[o]);
        if (s != nullptr) {
            if (threadIdx.x < P.p) P.gx[threadIdx.x] = static_cast<T>(product);
            if (threadIdx.x == P.p && P.intercept) *P.score_sum = product;
            if (threadIdx.x == 0 && !P.intercept) *P.score_sum = 0.0;
        }
        __syncthreads();
    }

    // F = loss / N + the memory part, at a point whose residual was just formed.
    __device__ double objective(double data, const T* point) const {
        return data / problem.terms.weight_sum + memory_value(problem.terms, point);
    }

    // grad f at `point` from the scores of the current residual (Z' s formed).
    __device__ void gradient(const T* point) const {
        gradient_into(problem.terms, point, problem.gx, problem.score_sum, 1, problem.gradient);
    }
};

// ||x||_2 and a' b in double, index order: each thread on its own copy.
template <class T>
__device__ double vector_norm(std::int64_t d, const T* x) {
    double sum = 0.0;
    for (std::int64_t j = 0; j < d; ++j) sum += static_cast<double>(x[j]) * static_cast<double>(x[j]);
    return sqrt(sum);
}

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
    BlockRows<T> rows;
    T* r;
    T* r_trial;
    bool majorizer_gram = false;
    bool refused = false;

    __device__ double start(const T* theta) { return rows.objective(rows.residual(theta, r), theta); }

    __device__ core::SolveRoute direction(const T* theta, T* step) {
        rows.score(r, true);
        rows.gradient(theta);
        return solve(rows.problem.G, step);
    }

    __device__ core::SolveRoute majorizer_direction(const T*, T* step) {
        if (!majorizer_gram) {
            rows.gram(rows.problem.w, nullptr, rows.problem.G_w);
            majorizer_gram = true;
        }
        return solve(rows.problem.G_w, step);  // with the gradient direction() formed
    }

    __device__ core::SolveRoute solve(const T* G, T* step) {
        const BlockProblem<T>& P = rows.problem;
        assemble_system_matrix(P.terms, G, P.H, P.flags);
        __syncthreads();
        small_cholesky_step<T, kBlockSolverParameters>(P.d, P.H, P.gradient, P.step, P.flags);
        __syncthreads();
        refused = refused || P.flags->step_ok == 0;
        for (std::int64_t j = 0; j < P.d; ++j) step[j] = refused ? T(0) : P.step[j];
        __syncthreads();  // every thread has read flags and step before they change
        return core::SolveRoute::cholesky;
    }

    __device__ double trial(double, const T* candidate, double) {
        return rows.objective(rows.residual(candidate, r_trial), candidate);
    }

    __device__ double accept(double, const T*, double trial_value) {
        swap_rows(r, r_trial);
        return trial_value;
    }

    __device__ double norm(const T* x) const { return vector_norm(rows.problem.d, x); }
};

// core::lamm's evaluator: the gradient from one pass (scores, Z' s), one
// pass per trial.
template <class T>
struct BlockLammEvaluator {
    BlockRows<T> rows;
    T* r;
    T* r_trial;

    __device__ double start(const T* theta) { return rows.objective(rows.residual(theta, r), theta); }
    __device__ double move_to(const T* point, const T*) { return start(point); }

    __device__ void gradient(const T* point, T* g) {
        rows.score(r, false);
        rows.gradient(point);
        for (std::int64_t j = 0; j < rows.problem.d; ++j) g[j] = rows.problem.gradient[j];
        __syncthreads();
    }

    __device__ double dot(const T* a, const T* b) const {
        double sum = 0.0;
        for (std::int64_t j = 0; j < rows.problem.d; ++j) sum += static_cast<double>(a[j]) * static_cast<double>(b[j]);
        return sum;
    }

    __device__ double norm(const T* x) const { return vector_norm(rows.problem.d, x); }

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
    const BlockRows<T> rows{P};
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
    BlockOutcome outcome;
    if (refused) {
        outcome.needs_pipeline = 1;
        if (threadIdx.x == 0) *P.outcome = outcome;
        return;
    }
    // Closing the batch: the residual at theta_hat, the curvature Gram there.
    rows.residual(result.theta, P.r);
    rows.score(P.r, true);
    for (std::int64_t e = threadIdx.x; e < P.d * P.d; e += blockDim.x) {
        const std::int64_t i = e / P.d, j = e - i * P.d;  // row-major
        P.J_next[e] = P.terms.information[e] + gram_at(P.G, P.d, i, j);
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
void launch_block_solver(cudaStream_t stream, const BlockProblem<T>& problem) {
    block_solver_kernel<T><<<1, kThreads, 0, stream>>>(problem);
    RH_CUDA_LAUNCHED();
}

template void launch_block_solver<float>(cudaStream_t, const BlockProblem<float>&);
template void launch_block_solver<double>(cudaStream_t, const BlockProblem<double>&);

}  // namespace rh::cuda

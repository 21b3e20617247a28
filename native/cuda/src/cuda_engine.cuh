// The CUDA engine for one dtype: one device, one parameter count, its
// device context (stream and vendor handles, device_context.cuh), the state
// resident on the device (current and staged next), its workspace and
// solve ladder. Lifecycle and state transfer in cuda_engine.cu, one batch
// transition in update.cu, the pipeline's solve in pipeline.cu, prediction
// in predict.cu.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "batch.cuh"
#include "block_solver.cuh"
#include "core/diagnostics.hpp"
#include "core/solver_config.hpp"
#include "core/state_view.hpp"
#include "device_context.cuh"
#include "engine_internal.cuh"
#include "graph_replay.cuh"
#include "linear_solver.cuh"
#include "objective.cuh"
#include "workspace.cuh"

namespace rh::cuda {

// The most parameters an engine serves (its per-thread and shared arrays).
inline constexpr std::int64_t kMaxParameters = 1024;

template <class T>
class CudaEngine final : public Engine {
public:
    explicit CudaEngine(const EngineOptions& options);
    // The stream drained before any buffer goes (the members are destroyed after).
    ~CudaEngine() override { context_.drain(); }

    void restore_state(const HostState& state) override;
    void copy_state(HostState& state) override;
    core::StateCounters counters() const override { return counters_; }
    UpdateReport update(const BatchInput& batch, const core::SolverConfig& config, void* coefficients_out) override;
    void predict(const BatchInput& batch, void* out) override;
    void synchronize() override;
    EngineFeatures features() const override;
    void revert() override;

private:
    struct SolveOutcome {
        int iterations = 0;
        bool converged = false;
        core::StopReason reason = core::StopReason::converged;
    };
    // The batch's surrogate terms (prepare in pipeline.cu).
    SurrogateTerms<T> terms(const core::SolverConfig& config, double weight_sum_after) const;
    SolveOutcome damped_newton(const StagedBatch<T>& batch, const SurrogateTerms<T>& terms, const core::SolverConfig& config,
                               T h, core::UpdateDiagnostics& diagnostics);
    SolveOutcome lamm(const StagedBatch<T>& batch, const SurrogateTerms<T>& terms, const core::SolverConfig& config,
                      double lambda_value);
    // r = y - Z point and the partial sums of w loss(r) there.
    void start(const StagedBatch<T>& batch, T tau, const T* point);
    // J_next = J + Z' diag(w kappa(r_hat)) Z, r_hat advanced by the last accepted step.
    void close(const StagedBatch<T>& batch, T tau, T h);
    // meat_next = meat + Z' diag(w score(r_hat)^2) Z at theta_next (launches
    // only: whichever path solved the batch, before the commit).
    void close_meat(const StagedBatch<T>& batch, T tau);
    // Scores the residual (advanced by the last accepted step or trial);
    // with `curvature` also c and the Gram G.
    void score(const StagedBatch<T>& batch, T tau, T h, bool curvature);
    // G = Z' diag(weights) Z (upper triangle, column-major): the narrow
    // kernel up to kNarrowGram parameters, GEMM of the weighted rows beyond.
    void weighted_gram(const StagedBatch<T>& batch, const T* weights, T* G);
    // The line search along ws.step from a system in ws.H (the Cholesky rung,
    // then the ladder's next rungs if it refused): the route of the step.
    core::SolveRoute search_along_step(const StagedBatch<T>& batch, const SurrogateTerms<T>& terms,
                                       const core::SolverConfig& config);
    // Amendment 0002's majorizer step from the gradient in ws.gradient: M =
    // (Z' diag(w) Z + J)/N + ridge I (its Gram formed on first need in a
    // batch), solved through the ladder, then the halving search and, when
    // t = 1 is taken, the doubling. Returns the route of M's solve.
    core::SolveRoute majorizer_step(const StagedBatch<T>& batch, const SurrogateTerms<T>& terms,
                                    const core::SolverConfig& config, bool& gram_formed);
    // The flags record to the host: copy (enqueued), wait (a synchronization,
    // counted), or both.
    void copy_flags();
    void wait_flags();
    void read_flags();
    // The line search's launches along ws.step (every halving, decided on the device).
    void line_search_launches(const StagedBatch<T>& batch, const SurrogateTerms<T>& terms,
                              const core::SolverConfig& config);
    // The Cholesky rung's step from ws.H, its search, the flags copy: launches only.
    void cholesky_search_launches(const StagedBatch<T>& batch, const SurrogateTerms<T>& terms,
                                  const core::SolverConfig& config);
    // After the Cholesky search's flags are read: the ladder's next rungs when
    // it refused the system, and their search; the route of the step.
    core::SolveRoute finish_search(const StagedBatch<T>& batch, const SurrogateTerms<T>& terms,
                                   const core::SolverConfig& config);
    // `launches` through `graph` when cuda_graphs is on, else directly.
    void replay_or_launch(GraphReplay* graph, const std::function<void()>& launches);
    // The block solver's launch for a staged batch (solve and closing into
    // ws.theta_next and ws.J_next), its outcome and coefficients read back
    // in one synchronization. False when its Cholesky rung refused a system.
    bool solve_in_one_block(const StagedBatch<T>& batch, const SurrogateTerms<T>& terms,
                            const core::SolverConfig& config, double h, double lambda_value, BlockOutcome& outcome);

    std::int64_t p_, d_;
    bool intercept_;
    bool cuda_graphs_ = false, fast_math_ = false;
    SolverChoice solver_choice_ = SolverChoice::automatic;  // which path may solve an update
    int block_capacity_ = 0;  // the block solver's resident blocks on this device (0: not asked yet)
    int block_tiles_ = kBlockSolverTilesPerBlock;  // tiles of rows per block at least (an engine option)
    DeviceContext context_;  // the stream and the vendor handles (destroyed after the buffers declared below)
    const cudaStream_t stream_;
    const cublasHandle_t blas_;
    const cusolverDnHandle_t solver_handle_;
    Workspace<T> ws_;
    LinearSolver<T> solver_;
    core::StateCounters counters_;
    // The state the last update replaced, kept in the staged buffers (the
    // commit swaps them) until the next update stages into them: revert()
    // puts it back while `revertible_`.
    core::StateCounters previous_counters_;
    bool revertible_ = false;
    // Whether the engine accumulates the meat (the last restore gave one).
    bool tracks_meat_ = false;
    std::vector<T> host_theta_;       // the committed coefficients, mirrored on the host
    std::vector<T> host_theta_next_;  // the staged ones, read back before the commit
    PinnedArray<IterationFlags> host_flags_{1};
    PinnedArray<BlockOutcome> host_outcome_{1};
    PinnedArray<double> host_sums_{kBatchCheckSums};
    PinnedArray<T> host_terms_;  // the penalty mask and history direction, uploaded per update
    int update_syncs_ = 0;
    std::int64_t updates_ = 0, host_syncs_ = 0;
    GraphReplay newton_graph_, lamm_graph_;  // cuda_graphs: a Newton iteration, LAMM's first pass
};

}  // namespace rh::cuda

// The CUDA engine for one dtype: one device, one parameter count, its
// device context (stream and vendor handles, device_context.cuh), the state
// resident on the device (current and staged next), its workspace and
// solve ladder. Lifecycle and state transfer in cuda_engine.cu, one batch
// transition in update.cu, the host-driven solve in host_driven_solve.cu,
// prediction in predict.cu.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "batch.cuh"
#include "block_solver.cuh"
#include "caller_batch_copy.cuh"
#include "core/diagnostics.hpp"
#include "core/solver_config.hpp"
#include "core/state_view.hpp"
#include "device_context.cuh"
#include "device_passes.cuh"
#include "engine_internal.cuh"
#include "graph_replay.cuh"
#include "host_staging.cuh"
#include "linear_solver.cuh"
#include "newton_loop_graph.cuh"
#include "objective.cuh"
#include "stream_point.cuh"
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
    std::vector<UpdateReport> update_batches(const BatchInput& batch, std::int64_t batch_size,
                                             const core::SolverConfig& config, void* coefficients_out) override;
    void predict(const BatchInput& batch, void* out) override;
    void synchronize() override;
    EngineFeatures features() const override;
    void revert() override;

private:
    // What solved a batch: its outcome and F at theta_hat (without the L1 term).
    struct SolveOutcome {
        int iterations = 0;
        bool converged = false;
        core::StopReason reason = core::StopReason::converged;
        double objective = 0.0;
        bool meat_closed = false;  // the meat's closing enqueued with the batch's
        bool drained = false;      // the stream waited for after everything the update enqueued
        // The host waited for a point after the solve's last read of a
        // caller's device batch and after its copy (the closings read the copy).
        bool released = false;
    };
    // The batch's surrogate terms.
    SurrogateTerms<T> terms(const core::SolverConfig& config, double weight_sum_after) const;
    // Core's driver for the penalty on the host over the device's passes
    // (host_driven_solve.cu), then the batch's closing into ws.theta_next,
    // ws.J_next and host_theta_next_.
    // `closing_batch`: the rows the closing reads (`batch`, or the engine's
    // copy of a caller's device batch, which the engine's stream joins
    // first, marking caller_released_ after it).
    SolveOutcome solve_on_host(const StagedBatch<T>& batch, const StagedBatch<T>& closing_batch,
                               const SurrogateTerms<T>& terms, const core::SolverConfig& config, double h,
                               double lambda_value, core::UpdateDiagnostics& diagnostics);
    // Core's Newton driver on the device (device_driven_solve.cu): the
    // batch's directions and the driver's replays as one CUDA graph's loop,
    // the closing (and the meat's) after it over `closing_batch` (as
    // solve_on_host's), one wait for the outcome (for the whole stream with
    // `drain`). Nothing when the loop cannot serve the batch (no graph
    // could be made; a system the Cholesky rung refused, the majorizer's
    // step): the host route solves it then.
    bool newton_on_device_serves(const core::SolverConfig& config) const;
    std::optional<SolveOutcome> solve_on_device(const StagedBatch<T>& batch, const StagedBatch<T>& closing_batch,
                                                const SurrogateTerms<T>& terms, const core::SolverConfig& config,
                                                double h, bool drain, core::UpdateDiagnostics& diagnostics);
    // The engine's rows for a copy of a caller's device batch of `rows`
    // (ws_'s host-batch buffers): false when the device has no room for
    // them (the update then reads the caller's arrays to the end, as
    // without the copy).
    bool reserve_caller_copy(std::int64_t rows, bool weighted);
    // Whether this update copies its batch (caller_batch_copy.cuh), and the
    // rows of the shortest batch whose copy found no room (0: none yet).
    bool copying_ = false;
    std::int64_t copy_refused_rows_ = 0;
    // The narrow route (d <= kNarrowGram, p <= kRowProductColumns): a Newton
    // direction reads everything that changes between batches from the
    // batch's constants, so its graphs are reused under graph_key(batch): the
    // rows and every placement of the workspace's or the solve ladder's buffers.
    bool narrow_route() const;
    GraphKey graph_key(const StagedBatch<T>& batch) const {
        return GraphKey{batch.rows, ws_.allocations() + solver_.allocations()};
    }
    // The passes of a batch over this engine's device buffers.
    DevicePasses<T> passes(const StagedBatch<T>& batch, const SurrogateTerms<T>& terms, const core::SolverConfig& config,
                           double h);
    // `graph` when cuda_graphs is on, else null (plain launches).
    GraphReplay* graph(GraphReplay& slot) { return cuda_graphs_ ? &slot : nullptr; }
    // The block solver's launch for a staged batch (solve and closing into
    // ws.theta_next and ws.J_next), its outcome and coefficients read back
    // in one synchronization. False when its Cholesky rung refused a system.
    // `check_values`: the launch checks the batch's values first (a batch
    // with a NaN or an infinity fails as check_batch_values fails it).
    bool solve_in_one_block(const StagedBatch<T>& batch, const SurrogateTerms<T>& terms,
                            const core::SolverConfig& config, double h, double lambda_value, bool check_values,
                            BlockOutcome& outcome);

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
    // update_batches' state before the call (the device arrays in ws_'s
    // *_before): what a failed slice goes back to, and what revert() puts
    // back after a successful call of several slices (`revert_to_before_`).
    struct StateBefore {
        std::vector<T> host_theta;
        core::StateCounters counters;
    } before_;
    bool revert_to_before_ = false;
    void keep_state_before();
    // The state before back (its host mirror and counters first, then the
    // device copies, which throw on a broken device).
    void restore_state_before();
    // The staging buffers for slices of `rows` rows (false: no room; staging is let go).
    bool staging_for(std::int64_t rows, bool weighted);
    // The configuration and the counters, checked before an update touches anything.
    void check_configuration(const core::SolverConfig& config) const;
    // Slice k of `batch_size` rows of `batch`, in the batch's memory.
    BatchInput slice_of(const BatchInput& batch, std::int64_t batch_size, std::int64_t k) const;
    // update_batches' staging of large host slices (made on first use).
    std::unique_ptr<HostStaging<T>> staging_;
    // Whether the engine accumulates the meat (the last restore gave one).
    bool tracks_meat_ = false;
    std::vector<T> host_theta_;       // the committed coefficients, mirrored on the host
    std::vector<T> host_theta_next_;  // the staged ones, read back before the commit
    PinnedArray<BlockOutcome> host_outcome_{1};
    PinnedArray<double> host_sums_{kBatchCheckSums};
    PinnedArray<T> host_terms_;  // the penalty mask and history direction, uploaded per update
    PassExchange<T> exchange_;   // the host-driven solve's transfers
    // The drivers' vectors on the host (six of d) and the LAMM evaluator's current point.
    std::vector<T> driver_vectors_;
    int update_syncs_ = 0;
    // A batch's value check awaiting its judgement at the solve's first
    // read-back (update.cu; none pending otherwise).
    DeferredCheck deferred_check_;
    // After the last update's closing when that update did not wait for it:
    // the next update writes the pass exchange only once the device is past it.
    StreamPoint closing_done_;
    std::int64_t updates_ = 0, host_syncs_ = 0;
    // cuda_graphs: a Newton direction's launches, LAMM's gradient and its trial pass.
    GraphReplay newton_graph_, lamm_gradient_graph_, lamm_trial_graph_;
    // The device-driven Newton solve's loop, and the point after its outcome's copy.
    NewtonLoopGraph newton_loop_;
    StreamPoint loop_solved_;
    // A caller's device batch copied for its closings, and the point after
    // the host route's last read of the caller's arrays and the copy.
    CallerBatchCopy<T> caller_copy_;
    StreamPoint caller_released_;
};

}  // namespace rh::cuda

// One batch transition of the CUDA engine (ALGORITHM.md): the host's
// checks, the batch staged and its values checked, the schedules and
// surrogate terms, the solve (a small batch, block_solver_serves, in one
// launch of the block solver, block_solver.cuh: one synchronization per
// update, the outcome, when the batch has unit weights and the launch checks
// its values; two with weights, the batch's checks first; any other batch, or one whose
// system the block solver's Cholesky rung refused, by core's driver on the
// host over the device's passes, host_driven_solve.cu: one synchronization
// per driver read-back, none for the closing; a caller's device batch is
// copied beside the solve for the closings, and the update waits once more,
// for the solve's last read of the caller's arrays and the copy, or for the
// whole stream where it was not copied), the meat, and the commit: nothing
// before the commit changes the state.
#include <algorithm>

#include "core/batch_closing.hpp"
#include "core/invariants.hpp"
#include "core/schedules.hpp"
#include "core/surrogate_terms.hpp"
#include "cuda_engine.cuh"
#include "launch.cuh"

namespace rh::cuda {

template <class T>
UpdateReport CudaEngine<T>::update(const BatchInput& batch, const core::SolverConfig& config, void* coefficients_out) {
    // 1. Everything that can be checked on the host, before any device work.
    check_configuration(config);
    check_batch_description(batch, element_type_of<T>(), device_, p_, true);
    core::check_room_for_batch(batch.rows, counters_);
    DeviceGuard guard(device_);
    revertible_ = false;  // the staged buffers, which hold the previous state, are written from here on
    revert_to_before_ = false;
    update_syncs_ = 0;
    // The last call may have returned with work of its on the device (the
    // host route's closing, or whatever a failed update had enqueued), which
    // reads the pinned buffers and the row buffers this update writes or
    // regrows: the device must be past it first. Every exit of this update
    // marks its own point again (a failed one too).
    if (closing_done_.wait_if_ahead()) ++update_syncs_;
    MarkOnExit mark_on_exit{closing_done_, stream_};

    // 2. The batch on the device, its values checked, its weight. A batch
    //    for the block solver with unit weights weighs its rows: its values
    //    are checked in the block solver's launch, which then has the
    //    update's only synchronization.
    //    A caller's device batch the pipeline solves is copied into the
    //    engine's rows beside the solve (caller_batch_copy.cuh): its
    //    closings read the copy, and the update waits for the solve and the
    //    copy, not for the closings.
    const bool try_block = !cuda_graphs_ && (solver_choice_ == SolverChoice::block
                                                 ? block_solver_fits(d_)
                                                 : solver_choice_ == SolverChoice::automatic &&
                                                       block_solver_serves(batch.rows, d_));
    const bool caller_device = batch.memory == BatchMemory::device && !batch.engine_owned;
    copying_ = caller_device && !try_block && CallerBatchCopy<T>::worth(batch.rows, p_) &&
               (copy_refused_rows_ == 0 || batch.rows < copy_refused_rows_) &&
               reserve_caller_copy(batch.rows, batch.sample_weight != nullptr);
    const StagedBatch<T> staged = stage_batch<T>(batch, ws_, device_, p_, d_, stream_);
    SettleOnExit<T> settle_copy{caller_copy_};  // no exit leaves the copy reading the caller's arrays
    const StagedBatch<T> closing_batch =
        copying_ ? caller_copy_.start(stream_, staged, p_, ws_.X.data(), ws_.y.data(), ws_.w.data()) : staged;
    // A batch of unit weights on the host route: its weight is its rows, so
    // its check needs no synchronization of its own; it is launched by the
    // solve's first pass (DeferredCheck) and judged after the solve's first
    // read-back (DevicePasses::wait), before the driver sees a value, and
    // nothing is committed before that.
    const bool checked_in_block = try_block && !staged.weighted;
    const bool checked_at_first_read = !try_block && !staged.weighted;
    double batch_weight = static_cast<double>(staged.rows);
    deferred_check_ = DeferredCheck{};
    if (checked_at_first_read) {
        deferred_check_.host_sums = host_sums_.get();  // launched by the solve's passes (DevicePasses)
    } else if (!checked_in_block) {
        batch_weight = check_batch_values<T>(staged, p_, ws_, host_sums_.get(), stream_);
        ++update_syncs_;
    }

    // 3. Schedules and surrogate terms (the mask and history direction from
    //    the committed coefficients' host mirror).
    const double weight_sum_after = counters_.weight_sum + batch_weight;
    const double h = core::bandwidth(config.tau, config.bandwidth_scale, weight_sum_after, p_);
    const double lambda_value =
        core::lambda_level(config.penalty, config.tau, config.lambda_scale, weight_sum_after, p_);
    T* mask = host_terms_.get();
    T* history = host_terms_.get() + d_;
    core::penalty_mask_and_history(d_, p_, host_theta_.data(), mask, history);
    // The device reads them for "l1" only (LAMM's proposals, and the history
    // term once rows were seen): a "none" update leaves its copies as they
    // are, two uploads and their host calls fewer.
    if (config.penalty == core::Penalty::l1) {
        RH_CUDA_CHECK(cudaMemcpyAsync(ws_.mask.data(), mask, sizeof(T) * d_, cudaMemcpyHostToDevice, stream_));
        RH_CUDA_CHECK(
            cudaMemcpyAsync(ws_.history.data(), history, sizeof(T) * d_, cudaMemcpyHostToDevice, stream_));
    }
    const SurrogateTerms<T> surrogate = terms(config, weight_sum_after);

    // 4. Solve from the committed coefficients and close the batch, into
    //    staged buffers: a small batch in one block (block_solver.cuh), any
    //    other (or one whose system the block's Cholesky rung refused) by
    //    core's driver on the host (host_driven_solve.cu). The coefficients
    //    are on the host either way.
    if (tracks_meat_) ws_.reserve_meat(device_, staged.rows, d_);
    BlockOutcome block;
    const bool solved_in_block =
        try_block && solve_in_one_block(staged, surrogate, config, h, lambda_value, checked_in_block, block);
    SolveOutcome outcome;
    core::UpdateDiagnostics diagnostics;
    if (solved_in_block) {
        outcome = {block.iterations, block.converged != 0, static_cast<core::StopReason>(block.stop_reason),
                   block.objective};
        diagnostics.solve_route = static_cast<core::SolveRoute>(block.solve_route);
        diagnostics.cholesky_solves = block.cholesky_solves;
        diagnostics.majorizer_steps = block.majorizer_steps;
    } else {
        // A caller's device batch, which the caller may free once this
        // returns, and which was not copied, is waited for at the end: the
        // device-driven solve's one wait is then for the whole stream.
        const bool drain = caller_device && !copying_;
        std::optional<SolveOutcome> on_device;
        if (!try_block && newton_on_device_serves(config))  // not a system the block solver's rung refused
            on_device = solve_on_device(staged, closing_batch, surrogate, config, h, drain, diagnostics);
        outcome = on_device ? *on_device
                            : solve_on_host(staged, closing_batch, surrogate, config, h, lambda_value, diagnostics);
    }

    // The meat at theta_hat: the block solver closed it in its launch, the
    // device-driven solve with its closing; otherwise its pass is launched
    // here (ordered before anything that reads it).
    if (tracks_meat_ && !solved_in_block && !outcome.meat_closed)
        passes(closing_batch, surrogate, config, h).close_meat();
    // The host route's closing (and the meat's pass) run on after this
    // returns: the state's buffers are read in stream order by whatever comes
    // next, and an asynchronous fault surfaces at the next call that waits.
    // A caller's device batch, which the caller may free once this returns,
    // is waited for: the point after the solve's last read of it and its
    // copy when it was copied (the closings read the copy and run on),
    // else the whole stream (the block solver's one synchronization already
    // came after its last read of the batch).
    if (outcome.drained) {
        mark_on_exit.drained();  // the device-driven solve's wait was for the whole stream
    } else if (copying_ && !outcome.released) {  // the host route's point (host_driven_solve.cu)
        RH_CUDA_CHECK(cudaEventSynchronize(caller_released_.event()));
        ++update_syncs_;
        caller_copy_.joined_and_waited();
    } else if (!solved_in_block && caller_device && !copying_) {
        RH_CUDA_CHECK(cudaStreamSynchronize(stream_));
        ++update_syncs_;
        mark_on_exit.drained();
    } else if (solved_in_block) {
        mark_on_exit.drained();  // the block solver's synchronization came after its launch, the update's last work
    }

    // 5. Commit (nothing before this point changed the state).
    ws_.theta_current.swap(ws_.theta_next);
    ws_.J_current.swap(ws_.J_next);
    if (tracks_meat_) ws_.meat_current.swap(ws_.meat_next);
    host_theta_.swap(host_theta_next_);
    previous_counters_ = counters_;
    counters_ = core::next_counters(counters_, staged.rows, lambda_value, weight_sum_after);
    revertible_ = true;
    ++updates_;
    host_syncs_ += update_syncs_;
    if (coefficients_out != nullptr) std::copy(host_theta_.begin(), host_theta_.end(), static_cast<T*>(coefficients_out));

    UpdateReport report;
    report.diagnostics = diagnostics;
    report.diagnostics.objective =
        core::reported_objective(config.penalty, outcome.objective, lambda_value, d_, host_theta_.data(), mask);
    report.diagnostics.lambda_value = lambda_value;
    report.diagnostics.bandwidth = h;
    report.diagnostics.iterations = outcome.iterations;
    report.diagnostics.converged = outcome.converged;
    report.diagnostics.stop_reason = outcome.reason;
    report.host_syncs = update_syncs_;
    report.solver_path = solved_in_block ? SolverPath::block
                                         : (try_block ? SolverPath::block_then_pipeline : SolverPath::pipeline);
    return report;
}

template <class T>
bool CudaEngine<T>::reserve_caller_copy(std::int64_t rows, bool weighted) {
    try {
        ws_.reserve_rows(device_, rows, p_, d_, true, !weighted, stream_);
        return true;
    } catch (const Failure& failure) {
        if (failure.status() != core::Status::out_of_memory) throw;
        cudaGetLastError();
        // The arena is empty again: staging places it without the copy's
        // rows. Batches this long or longer are not copied from now on (each
        // would free and place the arena again only to fail the same way).
        copy_refused_rows_ = rows;
        return false;
    }
}

template <class T>
void CudaEngine<T>::check_configuration(const core::SolverConfig& config) const {
    core::check_config(config);
    core::check_counters(counters_);
    if (config.fit_intercept != intercept_)
        throw Failure(core::Status::invalid_state, "state fit_intercept does not match the configuration");
}

template <class T>
bool CudaEngine<T>::solve_in_one_block(const StagedBatch<T>& batch, const SurrogateTerms<T>& terms,
                                       const core::SolverConfig& config, double h, double lambda_value,
                                       bool check_values, BlockOutcome& outcome) {
    BlockProblem<T> problem;
    problem.rows = batch.rows;
    problem.p = p_;
    problem.d = d_;
    problem.intercept = intercept_;
    problem.l1 = config.penalty == core::Penalty::l1;
    problem.X = batch.X;
    problem.y = batch.y;
    problem.w = batch.w;
    problem.terms = terms;
    problem.mask = ws_.mask.data();
    problem.tau = static_cast<T>(config.tau);
    problem.h = static_cast<T>(h);
    problem.lambda_value = lambda_value;
    problem.max_iter = config.max_iter;
    problem.tol = config.tol;
    problem.check_values = check_values;
    problem.r = ws_.r.data();
    problem.r_trial = ws_.trial_residuals.data();
    problem.s = ws_.s.data();
    problem.c = ws_.c.data();
    problem.matrices = ws_.block_matrices.data();
    problem.vectors = ws_.block_vectors.data();
    problem.score_sums = ws_.block_score_sums.data();
    problem.flags = ws_.block_flags.data();
    problem.partials = ws_.block_partials.data();
    problem.totals = problem.partials + block_solver_pass_partials(d_);
    if (block_capacity_ == 0) block_capacity_ = block_solver_capacity<T>(device_, d_);
    problem.blocks = block_solver_grid(block_capacity_, batch.rows, block_tiles_);
    problem.theta_next = ws_.theta_next.data();
    problem.J_next = ws_.J_next.data();
    problem.meat_current = tracks_meat_ ? ws_.meat_current.data() : nullptr;
    problem.meat_next = tracks_meat_ ? ws_.meat_next.data() : nullptr;
    problem.outcome = ws_.outcome.data();
    launch_block_solver<T>(stream_, problem);
    RH_CUDA_CHECK(cudaMemcpyAsync(host_outcome_.get(), ws_.outcome.data(), sizeof(BlockOutcome),
                                  cudaMemcpyDeviceToHost, stream_));
    RH_CUDA_CHECK(cudaMemcpyAsync(host_theta_next_.data(), ws_.theta_next.data(), sizeof(T) * d_,
                                  cudaMemcpyDeviceToHost, stream_));
    RH_CUDA_CHECK(cudaStreamSynchronize(stream_));
    ++update_syncs_;
    outcome = *host_outcome_.get();
    if (outcome.non_finite != 0) refuse_non_finite(outcome.non_finite == 1 ? "X" : "y");
    return outcome.needs_pipeline == 0;
}

template class CudaEngine<float>;
template class CudaEngine<double>;

}  // namespace rh::cuda

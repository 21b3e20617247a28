// Reading an update left queued (amendment 0004, depth one): update(...,
// defer) queued the device loop's solve, its outcome's copy and the closings
// over the engine's own rows of the batch (a host batch's staged rows, or
// the copy of a caller's device batch, read to the end before the update
// returned) and returned without waiting. settle() waits for the loop's
// outcome, judges the batch's value check, and then commits as update()
// commits: the loop's coefficients when it finished, else the host route's
// solve of the same rows (a system the Cholesky rung refused, the
// majorizer's step: the same hand-back as an immediate update's, the same
// bits). A failure throws with nothing committed: the state is the one
// before that update, as after an immediate update that failed.
#include "cuda_engine.cuh"

namespace rh::cuda {

template <class T>
UpdateReport CudaEngine<T>::settle(void* coefficients_out) {
    if (!pending_) throw Failure(core::Status::invalid_state, "no update is pending: nothing to settle");
    const UpdatePlan plan = *pending_;
    pending_.reset();  // read once, whatever happens below
    DeviceGuard guard(device_);
    update_syncs_ = pending_syncs_;
    copying_ = false;  // the rows are the engine's: nothing of the caller's is read from here
    MarkOnExit mark_on_exit{closing_done_, stream_};  // a hand-back's closing runs on after this returns

    DevicePasses<T> device = passes(plan.batch, plan.terms, plan.config, plan.h);
    device.wait_for(loop_solved_.event());  // judges the batch's values first (throws: nothing committed)
    core::UpdateDiagnostics diagnostics;
    std::optional<SolveOutcome> outcome = loop_outcome(diagnostics);
    if (!outcome) {
        outcome = solve_on_host(plan.batch, plan.batch, plan.terms, plan.config, plan.h, plan.lambda_value,
                                diagnostics);
        if (tracks_meat_) passes(plan.batch, plan.terms, plan.config, plan.h).close_meat();
    }
    return commit(plan, *outcome, diagnostics, SolverPath::pipeline, coefficients_out);
}

template class CudaEngine<float>;
template class CudaEngine<double>;

}  // namespace rh::cuda

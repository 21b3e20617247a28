// The Newton solve driven on the device (penalty "none", the narrow route
// with the one-block Cholesky rung: the streaming class): the starting
// point's pass, then one CUDA graph (newton_loop_graph.cuh) whose while
// loop forms a direction (the scoring pass with the Gram, the fused
// gradient, system and rung, the halving pass) and runs core's
// damped_newton on from where it stopped over that direction
// (newton_replay.cuh) until the driver stops; then the outcome's copy, the batch's closing and the
// meat's, and one wait. The host-driven route (host_driven_solve.cu) waits
// once per direction; this one once per batch. The driver's decisions are
// core's either way, on the same values: the same bits.
#include <algorithm>

#include "cuda_engine.cuh"
#include "small_newton_step.cuh"

namespace rh::cuda {

template <class T>
bool CudaEngine<T>::newton_on_device_serves(const core::SolverConfig& config) const {
    // "pipeline" (RH_CUDA_SOLVER) keeps the host-driven route: the A/B of the two routes in one build.
    return config.penalty == core::Penalty::none && solver_choice_ == SolverChoice::automatic &&
           narrow_route() && LinearSolver<T>::small_rung(d_) && newton_loop_.usable();
}

template <class T>
std::optional<typename CudaEngine<T>::SolveOutcome> CudaEngine<T>::solve_on_device(
    const StagedBatch<T>& batch, const StagedBatch<T>& closing_batch, const SurrogateTerms<T>& terms,
    const core::SolverConfig& config, double h, bool drain, core::UpdateDiagnostics& diagnostics) {
    DevicePasses<T> device = passes(batch, terms, config, h);
    device.send_constants();
    device.record_target = ws_.pass_record.data();
    DeviceNewtonLoop& loop = *exchange_.loop();
    loop = DeviceNewtonLoop{};
    loop.max_iter = config.max_iter;
    loop.tol = config.tol;
    RH_CUDA_CHECK(
        cudaMemcpyAsync(ws_.newton_loop.data(), &loop, sizeof(DeviceNewtonLoop), cudaMemcpyHostToDevice, stream_));
    device.send(host_theta_.data(), PassInputs{0.0, -1});
    device.point_pass();

    NewtonReplayArgs<T> replay;
    replay.loop = ws_.newton_loop.data();
    replay.live = ws_.pass_record.data();
    replay.system = ws_.system.data();
    replay.live_step = ws_.step.data();
    replay.terms = terms_in(device.batch_constants());
    replay.point_out = ws_.theta.data();
    replay.inputs = ws_.inputs.data();
    replay.d = d_;
    // Every argument below is fixed by the graph key (the batch's values come
    // from its constants): one graph serves every batch of the key.
    const bool looped = newton_loop_.run(stream_, graph_key(batch), [&](LoopCondition handle) {
        const ScoreSums sums = device.direction_scores();
        launch_small_newton_step<T>(stream_, terms, ws_.theta.data(), ws_.product.data(), sums.partials, sums.count,
                                    ws_.G.data(), ws_.gradient.data(), ws_.H.data(), ws_.step.data(), device.system(),
                                    terms_in(device.batch_constants()));
        device.halving_pass();
        launch_newton_replay<T>(stream_, replay, handle);
    });
    // No graph could be made: the host route passes the starting point again
    // (its uploads rewrite the pinned values the launches above may still
    // read, with the same bytes: the same point, inputs and constants).
    if (!looped) return std::nullopt;

    RH_CUDA_CHECK(
        cudaMemcpyAsync(&loop, ws_.newton_loop.data(), sizeof(DeviceNewtonLoop), cudaMemcpyDeviceToHost, stream_));
    RH_CUDA_CHECK(
        cudaMemcpyAsync(exchange_.vector(), ws_.theta.data(), sizeof(T) * d_, cudaMemcpyDeviceToHost, stream_));
    if (copying_) caller_copy_.join(stream_);  // the point waited for below is past the copy too
    RH_CUDA_CHECK(cudaEventRecord(loop_solved_.event(), stream_));
    // The closing at theta_hat (the replay left it in ws.theta and the last
    // accepted move in ws.inputs), over the copy of a caller's device batch
    // when there is one. When the loop handed the batch back, the host
    // route's closing overwrites these staged buffers.
    DevicePasses<T> closing = passes(closing_batch, terms, config, h);
    closing.close();
    if (tracks_meat_) closing.close_meat();
    device.wait_for(drain ? nullptr : loop_solved_.event());
    if (copying_) caller_copy_.joined_and_waited();
    if (loop.status != LoopStatus::finished) return std::nullopt;
    std::copy(exchange_.vector(), exchange_.vector() + d_, host_theta_next_.begin());
    diagnostics = loop.diagnostics;
    SolveOutcome outcome{loop.iterations, loop.converged != 0, loop.reason, loop.objective};
    outcome.meat_closed = true;
    outcome.drained = drain;
    outcome.released = copying_;
    return outcome;
}

template class CudaEngine<float>;
template class CudaEngine<double>;

}  // namespace rh::cuda

// One batch transition of the CUDA engine (ALGORITHM.md) and prediction.
//
// A small batch (block_solver_serves) is solved and closed in one launch by
// the block solver (block_solver.cuh): two synchronizations per update, the
// batch's checks and the outcome. Any other batch, or one whose system the
// block solver's Cholesky rung refused, goes through the pipeline below.
//
// The decisions of an iteration (the line search over every halving, LAMM's
// majorization test and phi, the convergence test) are made by kernels on
// the device, with core/solver_rules.hpp's functions; the host reads one
// IterationFlags record per iteration to know whether to continue. The
// host synchronizes once for the batch's checks and weight, once per
// iteration (twice when the Cholesky rung refuses a system, more on the
// SVD rung), and once at the end for the coefficients.
#include <algorithm>
#include <functional>
#include <limits>
#include <string>

#include "core/batch_closing.hpp"
#include "core/invariants.hpp"
#include "core/schedules.hpp"
#include "core/solver_rules.hpp"
#include "core/surrogate_terms.hpp"
#include "cuda_engine.cuh"
#include "gram_kernels.cuh"
#include "huber_kernels.cuh"
#include "launch.cuh"
#include "vendor_calls.cuh"

namespace rh::cuda {

namespace {

core::SolverConfig to_core(const rh_cuda_solver_config& c) {
    core::SolverConfig out;
    out.tau = c.tau;
    out.penalty = c.penalty == RH_CUDA_PENALTY_L1 ? core::Penalty::l1 : core::Penalty::none;
    if (c.penalty != RH_CUDA_PENALTY_NONE && c.penalty != RH_CUDA_PENALTY_L1)
        throw Failure(core::Status::invalid_argument, "penalty must be either 'none' or 'l1'");
    out.lambda_scale = c.lambda_scale;
    out.bandwidth_scale = c.bandwidth_scale;
    out.fit_intercept = c.fit_intercept != 0;
    out.max_iter = c.max_iter;
    out.tol = c.tol;
    out.ridge = c.ridge;
    return out;
}

}  // namespace

template <class T>
void CudaEngine<T>::copy_flags() {
    RH_CUDA_CHECK(cudaMemcpyAsync(host_flags_.get(), ws_.flags.data(), sizeof(IterationFlags), cudaMemcpyDeviceToHost,
                                  stream_));
}

template <class T>
void CudaEngine<T>::wait_flags() {
    RH_CUDA_CHECK(cudaStreamSynchronize(stream_));
    ++update_syncs_;
}

template <class T>
void CudaEngine<T>::read_flags() {
    copy_flags();
    wait_flags();
}

template <class T>
void CudaEngine<T>::replay_or_launch(GraphReplay* graph, const std::function<void()>& launches) {
    if (cuda_graphs_ && graph != nullptr)
        graph->run(stream_, launches);
    else
        launches();
}

template <class T>
SurrogateTerms<T> CudaEngine<T>::terms(const core::SolverConfig& config, double weight_sum_after) const {
    SurrogateTerms<T> t;
    t.d = d_;
    t.p = p_;
    t.intercept = intercept_;
    t.theta_prev = ws_.theta_current.data();
    t.information = ws_.J_current.data();
    t.history = ws_.history.data();
    t.uses_history = core::uses_history(config, counters_);
    t.history_coefficient = core::history_coefficient(counters_.weight_sum, weight_sum_after, counters_.previous_lambda);
    t.weight_sum = weight_sum_after;
    t.ridge = static_cast<T>(config.ridge);
    return t;
}

template <class T>
void CudaEngine<T>::start(const StagedBatch<T>& batch, T tau, const T* point) {
    const int n = static_cast<int>(batch.rows);
    vendor::rows_times(blas_, n, static_cast<int>(p_), batch.X, point, ws_.r.data());
    launch_start_residual<T>(stream_, batch.rows, batch.y, batch.w, intercept_ ? point + p_ : nullptr, tau,
                             ws_.r.data(), ws_.partials.data());
}

template <class T>
void CudaEngine<T>::score(const StagedBatch<T>& batch, T tau, T h, bool curvature) {
    const ResidualAdvance<T> advance{ws_.dz.data(), &ws_.flags.data()->t_advance, ws_.trial_residuals.data(),
                                     &ws_.flags.data()->trial_advance};
    launch_score_rows<T>(stream_, batch.rows, advance, batch.w, tau, h, ws_.r.data(), ws_.s.data(),
                         curvature ? ws_.c.data() : nullptr, ws_.partials.data());
    if (curvature) weighted_gram(batch, ws_.c.data(), ws_.G.data());
}

template <class T>
void CudaEngine<T>::weighted_gram(const StagedBatch<T>& batch, const T* weights, T* G) {
    if (d_ <= kNarrowGram) {  // the Gram from X and the weights directly
        launch_narrow_gram<T>(stream_, batch.rows, p_, intercept_, batch.X, weights, ws_.gram_partials.data(), G);
        return;
    }
    launch_weighted_rows<T>(stream_, batch.rows, p_, intercept_, batch.X, weights, ws_.weighted_rows.data());
    vendor::gram(blas_, static_cast<int>(batch.rows), static_cast<int>(d_), ws_.weighted_rows.data(), G);
}

// The line search from ws.theta along ws.step (every halving in one pass,
// decided on the device), then the ladder's next rungs when the Cholesky rung
// refused the system in ws.H: returns the route that gave the step.
template <class T>
void CudaEngine<T>::line_search_launches(const StagedBatch<T>& batch, const SurrogateTerms<T>& terms,
                                         const core::SolverConfig& config) {
    const int n = static_cast<int>(batch.rows), p = static_cast<int>(p_);
    vendor::rows_times(blas_, n, p, batch.X, ws_.step.data(), ws_.dz.data());
    launch_line_search_losses<T>(stream_, batch.rows, ws_.r.data(), ws_.dz.data(),
                                 intercept_ ? ws_.step.data() + p_ : nullptr, batch.w, static_cast<T>(config.tau),
                                 ws_.partials.data());
    launch_line_search_decide<T>(stream_, terms, ws_.theta.data(), ws_.step.data(), ws_.partials.data(),
                                 row_blocks(batch.rows), config.tol, ws_.flags.data());
}

template <class T>
void CudaEngine<T>::cholesky_search_launches(const StagedBatch<T>& batch, const SurrogateTerms<T>& terms,
                                             const core::SolverConfig& config) {
    solver_.cholesky_step(stream_, solver_handle_, d_, ws_.H.data(), ws_.gradient.data(), ws_.step.data(),
                          ws_.flags.data());
    line_search_launches(batch, terms, config);
    copy_flags();
}

template <class T>
core::SolveRoute CudaEngine<T>::finish_search(const StagedBatch<T>& batch, const SurrogateTerms<T>& terms,
                                              const core::SolverConfig& config) {
    if (!host_flags_.get()->need_fallback) return core::SolveRoute::cholesky;
    const core::SolveRoute route = solver_.fallback_step(stream_, solver_handle_, d_, ws_.H.data(),
                                                         ws_.gradient.data(), ws_.step.data(), ws_.flags.data(),
                                                         host_flags_.get(), &update_syncs_);
    line_search_launches(batch, terms, config);
    read_flags();
    return route;
}

template <class T>
core::SolveRoute CudaEngine<T>::search_along_step(const StagedBatch<T>& batch, const SurrogateTerms<T>& terms,
                                                  const core::SolverConfig& config) {
    cholesky_search_launches(batch, terms, config);
    wait_flags();
    return finish_search(batch, terms, config);
}

template <class T>
core::SolveRoute CudaEngine<T>::majorizer_step(const StagedBatch<T>& batch, const SurrogateTerms<T>& terms,
                                               const core::SolverConfig& config, bool& gram_formed) {
    if (!gram_formed) {
        weighted_gram(batch, batch.w, ws_.G_majorizer.data());
        gram_formed = true;
    }
    launch_majorizer_matrix<T>(stream_, terms, ws_.G_majorizer.data(), ws_.H.data(), ws_.flags.data());
    RH_CUDA_CHECK(cudaMemcpyAsync(ws_.search_start.data(), ws_.theta.data(), sizeof(T) * d_, cudaMemcpyDeviceToDevice,
                                  stream_));
    const core::SolveRoute route = search_along_step(batch, terms, config);
    const IterationFlags& seen = *host_flags_.get();
    if (seen.accepted && seen.t_advance == 1.0) {  // t = 1 taken: double while f strictly decreases
        launch_doubling_losses<T>(stream_, batch.rows, ws_.r.data(), ws_.dz.data(), batch.w,
                                  static_cast<T>(config.tau), ws_.partials.data());
        launch_doubling_decide<T>(stream_, terms, ws_.search_start.data(), ws_.step.data(), ws_.partials.data(),
                                  row_blocks(batch.rows), config.tol, ws_.theta.data(), ws_.flags.data());
        read_flags();
    }
    return route;
}

// core::damped_newton's decisions (amendment 0002), with the trials of each
// search decided on the device: a Newton step whose search is exhausted is
// replaced by the majorizer's; a step from the least-squares route certifies
// nothing, so the next iteration takes the majorizer's step and only it may
// declare convergence. (That iteration does not solve the Newton system only
// to record its route: the route reported, the most robust any system
// needed, is least_squares already.)
template <class T>
typename CudaEngine<T>::SolveOutcome CudaEngine<T>::damped_newton(const StagedBatch<T>& batch,
                                                                  const SurrogateTerms<T>& terms,
                                                                  const core::SolverConfig& config, T h,
                                                                  core::UpdateDiagnostics& diagnostics) {
    const int n = static_cast<int>(batch.rows), p = static_cast<int>(p_);
    const T tau = static_cast<T>(config.tau);
    const int blocks = row_blocks(batch.rows);
    const IterationFlags& seen = *host_flags_.get();
    bool certify = false, majorizer_gram = false;
    auto newton_system = [&] {
        score(batch, tau, h, true);  // r advanced by the last step; s, c, the Gram
        vendor::transposed_times(blas_, n, p, batch.X, ws_.s.data(), ws_.product.data());
        launch_newton_system<T>(stream_, terms, ws_.theta.data(), ws_.product.data(), ws_.partials.data(), blocks,
                                ws_.G.data(), ws_.gradient.data(), ws_.H.data(), ws_.flags.data());
    };
    for (int iteration = 1; iteration <= config.max_iter; ++iteration) {
        bool by_majorizer = certify;
        core::SolveRoute route = core::SolveRoute::least_squares;
        if (!by_majorizer) {  // the system, its Cholesky step and the search: one graph when captured
            replay_or_launch(&newton_graph_, [&] {
                newton_system();
                cholesky_search_launches(batch, terms, config);
            });
            wait_flags();
            route = finish_search(batch, terms, config);
            diagnostics.record(route);
        } else {
            newton_system();
        }
        if (by_majorizer || !seen.accepted) {  // certifying, or Newton's search exhausted
            diagnostics.record(majorizer_step(batch, terms, config, majorizer_gram));
            ++diagnostics.majorizer_steps;
            by_majorizer = true;
        }
        if (!seen.accepted) return {iteration, false, core::StopReason::line_search_exhausted};
        certify = route == core::SolveRoute::least_squares && !by_majorizer;
        if (seen.converged) {
            if (certify) continue;
            return {iteration, true, core::StopReason::converged};
        }
        certify = false;
    }
    return {config.max_iter, false, core::StopReason::max_iter};
}

// core::lamm's decisions (amendment 0002), each pass of trials decided on the
// device: the v1 iteration until it converges or stalls (core::lamm_stalled,
// judged on the host from the accepted step's norms and phi), then the
// accelerated phase from FISTA's extrapolated points, its momentum restarted
// whenever a step would raise the penalized objective.
template <class T>
typename CudaEngine<T>::SolveOutcome CudaEngine<T>::lamm(const StagedBatch<T>& batch, const SurrogateTerms<T>& terms,
                                                         const core::SolverConfig& config, double lambda_value) {
    const int n = static_cast<int>(batch.rows), p = static_cast<int>(p_);
    const T tau = static_cast<T>(config.tau);
    const int blocks = row_blocks(batch.rows);
    IterationFlags* flags = ws_.flags.data();
    const IterationFlags& seen = *host_flags_.get();
    const LammTrials<T> trials = ws_.lamm_trials();
    // The gradient at `from` (the residual there, advanced by any accepted
    // trial), then passes of trials until one is taken, a restart is called
    // or kMaxMajorizationTrials failed. True when a trial was taken.
    // `graph`: the plain phase's first pass (its arguments fixed within the
    // batch) replays one captured graph; later passes and the accelerated
    // phase (beta changes every iteration) launch plainly.
    auto iterate_from = [&](const T* from, const LammJudgement& judgement, GraphReplay* graph) {
        auto pass = [&](int count) {
            launch_lamm_proposals<T>(stream_, terms, from, ws_.gradient.data(), ws_.mask.data(), lambda_value, count,
                                     flags, trials);
            vendor::rows_times_matrix(blas_, n, p, count, batch.X, trials.feature_changes, ws_.trial_products.data());
            launch_lamm_trials<T>(stream_, batch.rows, count, ws_.r.data(), ws_.trial_products.data(),
                                  intercept_ ? trials.intercept_changes : nullptr, batch.w, tau,
                                  ws_.trial_residuals.data(), ws_.partials.data());
            launch_lamm_decide<T>(stream_, terms, count, ws_.partials.data(), blocks, config.tol, trials,
                                  ws_.mask.data(), judgement, ws_.theta.data(), flags);
            copy_flags();
        };
        int used = std::min(kLammTrialsPerPass, core::kMaxMajorizationTrials);
        replay_or_launch(graph, [&] {
            score(batch, tau, T(1), false);
            vendor::transposed_times(blas_, n, p, batch.X, ws_.s.data(), ws_.product.data());
            launch_gradient<T>(stream_, terms, from, ws_.product.data(), ws_.partials.data(), blocks,
                               ws_.gradient.data());
            pass(used);
        });
        wait_flags();
        while (!(seen.accepted || seen.restarted) && used < core::kMaxMajorizationTrials) {
            const int count = std::min(kLammTrialsPerPass, core::kMaxMajorizationTrials - used);
            pass(count);
            wait_flags();
            used += count;
        }
        return seen.accepted != 0;
    };
    // The residual and F at a point the iteration jumps to.
    auto move_to = [&](const T* point, bool is_theta) {
        start(batch, tau, point);
        launch_point_objective<T>(stream_, terms, point, ws_.partials.data(), blocks, is_theta, flags);
    };

    const LammJudgement plain{false, false, lambda_value};
    double step_norms[core::kStallWindow + 1];
    int iteration = 0;
    bool stalled = false;
    while (!stalled && iteration < config.max_iter) {
        ++iteration;
        if (!iterate_from(ws_.theta.data(), plain, &lamm_graph_))
            return {iteration, false, core::StopReason::majorization_exhausted};
        if (seen.converged) return {iteration, true, core::StopReason::converged};
        step_norms[iteration % (core::kStallWindow + 1)] = seen.change_norm;
        const double window_ago = iteration > core::kStallWindow
                                      ? step_norms[(iteration - core::kStallWindow) % (core::kStallWindow + 1)]
                                      : std::numeric_limits<double>::infinity();
        stalled = core::lamm_stalled(iteration, seen.change_norm, window_ago, seen.accepted_phi, seen.theta_norm,
                                     config.tol);
    }
    if (!stalled) return {config.max_iter, false, core::StopReason::max_iter};

    // The accelerated phase. The decide kernel writes a taken trial into
    // ws.theta; `previous` receives theta first (core::lamm: previous is the
    // old theta after a step and theta itself after a restart).
    RH_CUDA_CHECK(cudaMemcpyAsync(ws_.previous.data(), ws_.theta.data(), sizeof(T) * d_, cudaMemcpyDeviceToDevice,
                                  stream_));
    double momentum = 1.0;
    bool residual_at_theta = true;
    SolveOutcome outcome{config.max_iter, false, core::StopReason::max_iter};
    while (iteration < config.max_iter) {
        ++iteration;
        const double momentum_after = core::momentum_next(momentum);
        const double beta = (momentum - 1.0) / momentum_after;
        const bool extrapolate = beta > 0.0;
        const T* from = ws_.theta.data();
        if (extrapolate) {
            launch_extrapolate<T>(stream_, d_, ws_.theta.data(), ws_.previous.data(), beta, ws_.extrapolated.data());
            move_to(ws_.extrapolated.data(), false);
            from = ws_.extrapolated.data();
        } else if (!residual_at_theta) {
            move_to(ws_.theta.data(), true);  // back after a restart
        }
        residual_at_theta = !extrapolate;
        RH_CUDA_CHECK(cudaMemcpyAsync(ws_.previous.data(), ws_.theta.data(), sizeof(T) * d_,
                                      cudaMemcpyDeviceToDevice, stream_));
        if (!iterate_from(from, LammJudgement{true, extrapolate, lambda_value}, nullptr)) {
            if (!extrapolate) {
                outcome = {iteration, false, core::StopReason::majorization_exhausted};
                break;
            }
            momentum = 1.0;  // restart (or the trials from the extrapolated point failed)
            continue;
        }
        residual_at_theta = true;
        momentum = momentum_after;
        if (seen.converged) {
            outcome = {iteration, true, core::StopReason::converged};
            break;
        }
    }
    // The information is formed at theta's residual: recompute it when the
    // last point visited was an extrapolated one.
    if (!residual_at_theta) move_to(ws_.theta.data(), true);
    return outcome;
}

template <class T>
void CudaEngine<T>::close(const StagedBatch<T>& batch, T tau, T h) {
    score(batch, tau, h, true);  // r_hat: the last accepted step applied; c and the Gram there
    launch_information_update<T>(stream_, d_, ws_.J_current.data(), ws_.G.data(), ws_.J_next.data());
    RH_CUDA_CHECK(cudaMemcpyAsync(ws_.theta_next.data(), ws_.theta.data(), sizeof(T) * d_, cudaMemcpyDeviceToDevice,
                                  stream_));
}

template <class T>
void CudaEngine<T>::close_meat(const StagedBatch<T>& batch, T tau) {
    ws_.reserve_meat(device_, batch.rows, d_);
    start(batch, tau, ws_.theta_next.data());  // r_hat = y - Z theta_hat (its loss partials unused)
    launch_meat_weights<T>(stream_, batch.rows, ws_.r.data(), batch.w, tau, ws_.meat_weights.data());
    weighted_gram(batch, ws_.meat_weights.data(), ws_.G.data());
    launch_information_update<T>(stream_, d_, ws_.meat_current.data(), ws_.G.data(), ws_.meat_next.data());
}

template <class T>
void CudaEngine<T>::update(const rh_cuda_batch& batch, const rh_cuda_solver_config& abi_config, void* coefficients_out,
                           rh_cuda_diagnostics& out) {
    // 1. Everything that can be checked on the host, before any device work.
    const core::SolverConfig config = to_core(abi_config);
    core::check_config(config);
    core::check_counters(counters_);
    if (config.fit_intercept != intercept_)
        throw Failure(core::Status::invalid_state, "state fit_intercept does not match the configuration");
    check_batch_description(batch, sizeof(T) == 8 ? RH_CUDA_FLOAT64 : RH_CUDA_FLOAT32, device_, p_, true);
    core::check_room_for_batch(batch.rows, counters_);
    DeviceGuard guard(device_);
    revertible_ = false;  // the staged buffers, which hold the previous state, are written from here on
    update_syncs_ = 0;
    newton_graph_.new_batch();
    lamm_graph_.new_batch();

    // 2. The batch on the device, its values checked, its weight.
    const StagedBatch<T> staged = stage_batch<T>(batch, ws_, device_, p_, d_, stream_);
    const double batch_weight = check_batch_values<T>(staged, p_, ws_, host_sums_.get(), stream_);
    ++update_syncs_;

    // 3. Schedules and surrogate terms (the mask and history direction from
    //    the committed coefficients' host mirror).
    const double weight_sum_after = counters_.weight_sum + batch_weight;
    const double h = core::bandwidth(config.tau, config.bandwidth_scale, weight_sum_after, p_);
    const double lambda_value =
        core::lambda_level(config.penalty, config.tau, config.lambda_scale, weight_sum_after, p_);
    T* mask = host_terms_.get();
    T* history = host_terms_.get() + d_;
    core::penalty_mask_and_history(d_, p_, host_theta_.data(), mask, history);
    RH_CUDA_CHECK(cudaMemcpyAsync(ws_.mask.data(), mask, sizeof(T) * d_, cudaMemcpyHostToDevice, stream_));
    RH_CUDA_CHECK(cudaMemcpyAsync(ws_.history.data(), history, sizeof(T) * d_, cudaMemcpyHostToDevice, stream_));
    const SurrogateTerms<T> surrogate = terms(config, weight_sum_after);

    // 4. Solve from the committed coefficients and close the batch, into
    //    staged buffers: a small batch in one block (block_solver.cuh), any
    //    other (or one whose system the block's Cholesky rung refused)
    //    through the pipeline. The coefficients are read back either way.
    const T tau = static_cast<T>(config.tau), bandwidth = static_cast<T>(h);
    const bool try_block = !cuda_graphs_ && (solver_choice_ == RH_CUDA_SOLVER_BLOCK
                                                 ? block_solver_fits(d_)
                                                 : solver_choice_ == RH_CUDA_SOLVER_AUTO &&
                                                       block_solver_serves(staged.rows, d_));
    BlockOutcome block;
    const bool solved_in_block = try_block && solve_in_one_block(staged, surrogate, config, h, lambda_value, block);
    SolveOutcome outcome;
    core::UpdateDiagnostics diagnostics;
    double objective = 0.0;  // F at the accepted iterate
    if (solved_in_block) {
        outcome = {block.iterations, block.converged != 0, static_cast<core::StopReason>(block.stop_reason)};
        diagnostics.solve_route = static_cast<core::SolveRoute>(block.solve_route);
        diagnostics.cholesky_solves = block.cholesky_solves;
        diagnostics.majorizer_steps = block.majorizer_steps;
        objective = block.objective;
    } else {
        RH_CUDA_CHECK(cudaMemcpyAsync(ws_.theta.data(), ws_.theta_current.data(), sizeof(T) * d_,
                                      cudaMemcpyDeviceToDevice, stream_));
        start(staged, tau, ws_.theta.data());
        launch_start_objective(stream_, ws_.partials.data(), row_blocks(staged.rows), weight_sum_after,
                               ws_.flags.data());
        outcome = config.penalty == core::Penalty::l1 ? lamm(staged, surrogate, config, lambda_value)
                                                      : damped_newton(staged, surrogate, config, bandwidth, diagnostics);
        objective = host_flags_.get()->base_objective;
        close(staged, tau, bandwidth);
        RH_CUDA_CHECK(cudaMemcpyAsync(host_theta_next_.data(), ws_.theta_next.data(), sizeof(T) * d_,
                                      cudaMemcpyDeviceToHost, stream_));
        RH_CUDA_CHECK(cudaStreamSynchronize(stream_));
        ++update_syncs_;
    }

    // The meat at theta_hat (launched here, ordered before anything that reads it).
    if (tracks_meat_) close_meat(staged, tau);

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

    out.objective = core::reported_objective(config.penalty, objective, lambda_value, d_, host_theta_.data(), mask);
    out.lambda_value = lambda_value;
    out.bandwidth = h;
    out.iterations = outcome.iterations;
    out.converged = outcome.converged ? 1 : 0;
    out.stop_reason = static_cast<uint8_t>(outcome.reason);
    out.solve_route = static_cast<int32_t>(diagnostics.solve_route);
    out.cholesky_solves = diagnostics.cholesky_solves;
    out.lu_solves = diagnostics.lu_solves;
    out.least_squares_solves = diagnostics.least_squares_solves;
    out.host_syncs = update_syncs_;
    out.solver_path = solved_in_block ? RH_CUDA_PATH_BLOCK
                                      : (try_block ? RH_CUDA_PATH_BLOCK_THEN_PIPELINE : RH_CUDA_PATH_PIPELINE);
}

template <class T>
bool CudaEngine<T>::solve_in_one_block(const StagedBatch<T>& batch, const SurrogateTerms<T>& terms,
                                       const core::SolverConfig& config, double h, double lambda_value,
                                       BlockOutcome& outcome) {
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
    if (block_capacity_ == 0) block_capacity_ = block_solver_capacity<T>(device_);
    problem.blocks = block_solver_grid(block_capacity_, batch.rows, block_tiles_);
    problem.theta_next = ws_.theta_next.data();
    problem.J_next = ws_.J_next.data();
    problem.outcome = ws_.outcome.data();
    launch_block_solver<T>(stream_, problem);
    RH_CUDA_CHECK(cudaMemcpyAsync(host_outcome_.get(), ws_.outcome.data(), sizeof(BlockOutcome),
                                  cudaMemcpyDeviceToHost, stream_));
    RH_CUDA_CHECK(cudaMemcpyAsync(host_theta_next_.data(), ws_.theta_next.data(), sizeof(T) * d_,
                                  cudaMemcpyDeviceToHost, stream_));
    RH_CUDA_CHECK(cudaStreamSynchronize(stream_));
    ++update_syncs_;
    outcome = *host_outcome_.get();
    return outcome.needs_pipeline == 0;
}

template <class T>
void CudaEngine<T>::predict(const rh_cuda_batch& batch, void* out) {
    check_batch_description(batch, sizeof(T) == 8 ? RH_CUDA_FLOAT64 : RH_CUDA_FLOAT32, device_, p_, false);
    if (out == nullptr) throw Failure(core::Status::invalid_argument, "out must not be null");
    DeviceGuard guard(device_);
    const std::int64_t n = batch.rows;
    const bool host = batch.memory == RH_CUDA_MEMORY_HOST;
    const T* X = static_cast<const T*>(batch.X);
    T* target = static_cast<T*>(out);
    if (host) {
        ws_.reserve_rows(device_, n, p_, d_, true, false, stream_);
        RH_CUDA_CHECK(cudaMemcpyAsync(ws_.X.data(), batch.X, sizeof(T) * n * p_, cudaMemcpyHostToDevice, stream_));
        X = ws_.X.data();
        target = ws_.r.data();
    } else {
        if (batch.stream != 0 && reinterpret_cast<cudaStream_t>(batch.stream) != stream_) {
            cudaEvent_t ready;
            RH_CUDA_CHECK(cudaEventCreateWithFlags(&ready, cudaEventDisableTiming));
            RH_CUDA_CHECK(cudaEventRecord(ready, reinterpret_cast<cudaStream_t>(batch.stream)));
            RH_CUDA_CHECK(cudaStreamWaitEvent(stream_, ready, 0));
            RH_CUDA_CHECK(cudaEventDestroy(ready));
        }
    }
    vendor::rows_times(blas_, static_cast<int>(n), static_cast<int>(p_), X, ws_.theta_current.data(), target);
    if (intercept_) launch_add_intercept<T>(stream_, n, ws_.theta_current.data() + p_, target);
    if (host) {
        RH_CUDA_CHECK(cudaMemcpyAsync(out, target, sizeof(T) * n, cudaMemcpyDeviceToHost, stream_));
        RH_CUDA_CHECK(cudaStreamSynchronize(stream_));
    } else if (batch.stream != 0 && reinterpret_cast<cudaStream_t>(batch.stream) != stream_) {
        // The consumer's stream waits for the prediction.
        cudaEvent_t done;
        RH_CUDA_CHECK(cudaEventCreateWithFlags(&done, cudaEventDisableTiming));
        RH_CUDA_CHECK(cudaEventRecord(done, stream_));
        RH_CUDA_CHECK(cudaStreamWaitEvent(reinterpret_cast<cudaStream_t>(batch.stream), done, 0));
        RH_CUDA_CHECK(cudaEventDestroy(done));
    }
}

template class CudaEngine<float>;
template class CudaEngine<double>;

}  // namespace rh::cuda

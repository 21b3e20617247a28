// The pipeline's solve of one batch (ALGORITHM.md), for the batches the
// block solver (block_solver.cuh) does not serve or whose system its
// Cholesky rung refused (update.cu chooses), and the batch's closing.
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

#include "core/solver_rules.hpp"
#include "core/surrogate_terms.hpp"
#include "cuda_engine.cuh"
#include "gram_kernels.cuh"
#include "huber_kernels.cuh"
#include "launch.cuh"
#include "vendor_calls.cuh"

namespace rh::cuda {

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

template class CudaEngine<float>;
template class CudaEngine<double>;

}  // namespace rh::cuda

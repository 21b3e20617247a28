// Fast LAMM (penalty "l1"): the fast path's arithmetic for the shared LAMM
// iterations (lamm.hpp).
#pragma once

#include <algorithm>
#include <cstdint>

#include "cpu/fast_path.hpp"
#include "cpu/lamm.hpp"
#include "cpu/local_huber_model.hpp"

namespace rh::cpu::fast {

// A majorization trial is one fused pass over X (fused_trial): its
// residual, loss and, speculatively, its X' s. Trials are accepted far more
// often than not, and an accepted trial's residual becomes the next
// iteration's, whose gradient then reuses that X' s: one pass over X per
// iteration instead of two (a GEMV for the trial and a GEMV' for the
// gradient).
//
// A trial's X' s is wasted when the trial is rejected. LAMM restarts every
// iteration at half the last accepted phi, and when the last iteration had
// to raise phi that first trial is usually rejected again; it is then run
// without the speculative product (a correct guess saves the accumulation,
// a wrong one costs the accepted point's gradient a pass of its own).
//
// Once the steps are short (rows of up to kLocalMaxFeatures features), the
// trials need no pass at all: at an accepted point whose residual a pass
// computed, a LocalHuberModel is built for a ball around it, and every
// trial inside the ball is evaluated from the model (its gradient too,
// when accepted). A trial outside the
// ball is a pass from the model's anchor residual; when such a trial is
// accepted the model is dropped and may be rebuilt at that point.
template <class T>
struct FastLammEvaluator {
    const Problem<T>& P;
    Gram<T>& gram;
    core::UpdateDiagnostics& diagnostics;
    LocalHuberModel<T> local{P};
    // The residual buffer whose X' s and score sum ws.trial_products holds
    // (or, when trial_local, the buffer that stands for the model's point).
    const T* trial_residual = nullptr;
    double trial_score_sum = 0.0;
    double trial_loss = 0.0;  // sum w loss at the last trial
    double trial_step = 0.0;  // ||change|| of the last trial
    bool trial_local = false;  // the last trial was evaluated by the model
    int trials_this_iteration = 0;
    int trials_last_iteration = 0;

    double start(const T* theta, T* r) {
        if (const StartPass pass = start_residual(P, theta, r, false); pass.scored) {  // X' s(r) came with it
            trial_residual = r;
            trial_score_sum = pass.sums.score_sum;
        } else {
            trial_residual = nullptr;
        }
        trial_step = 0.0;  // no model at the start point: no step to size it by
        return objective_value(P, theta, r);
    }
    void gradient(const T* theta, const T* r, T* g) {
        trials_last_iteration = trials_this_iteration;
        trials_this_iteration = 0;
        if (r == trial_residual && trial_local) {  // accepted inside the model
            double score_sum = 0.0;
            local.scores(theta, g, &score_sum);
            finish_gradient(P, theta, score_sum, g);
            return;
        }
        if (r == trial_residual) {  // accepted by a pass: r is exact, X' s(r) in ws.trial_products
            std::copy(P.ws->trial_products.data(), P.ws->trial_products.data() + P.features, g);
            local.deactivate();
            if (P.local_models && P.features <= kLocalMaxFeatures && trial_step > 0.0 &&
                local.build(gram, diagnostics, theta, r, trial_loss, g, trial_score_sum, trial_step))
                ++P.local_model_builds;
            finish_gradient(P, theta, trial_score_sum, g);
            return;
        }
        const ScoreSums sums = scores(P, r, false);
        fast::gradient(P, theta, P.ws->weighted_score.data(), sums.score_sum, g);
    }
    double dot(const T* a, const T* b) const { return fast::dot(P.d, a, b); }
    double norm(const T* x) const { return euclidean_norm(P.d, x); }
    // The first trial of an iteration that is expected to be rejected (the
    // last iteration had to raise phi) is paired with the next one: one
    // pass evaluates both, and the second's result waits here until
    // lamm_iterations asks for it (its change is recognized bit for bit).
    bool pair_requested = false;
    bool pair_ready = false;
    TrialSums pair_sums{};

    T* pair_buffer() {
        pair_ready = false;
        pair_requested = P.pair_trials && !local.active() && P.features <= narrow_pass_max_features<T> &&
                         trials_this_iteration == 0 && trials_last_iteration > 1;
        return pair_requested ? P.ws->pair_change.data() : nullptr;
    }
    double candidate_value(const T* candidate, const T* change, const T* r, T* candidate_residual) {
        Workspace<T>& ws = *P.ws;
        ++trials_this_iteration;
        trial_step = norm(change);
        trial_local = false;
        if (local.active()) {
            trial_residual = candidate_residual;
            if (local.contains(candidate)) {
                trial_local = true;
                ++P.local_trials;
                return local.loss(candidate) / P.weight_sum + memory_value(P, candidate);
            }
            // Outside the ball: a pass from the anchor (ws.residual is not
            // computed while the model serves).
            return by_pass(
                fused_trial(P, local.change_from_anchor(candidate), ws.anchor_residual.data(), candidate_residual),
                candidate);
        }
        if (pair_ready && std::equal(change, change + P.d, ws.pair_change.data())) {  // the pair's second trial
            pair_ready = false;
            std::swap(ws.candidate_residual, ws.pair_residual);  // its residual is now the candidate's
            trial_residual = ws.candidate_residual.data();
            return by_pass(pair_sums, candidate);
        }
        pair_ready = false;
        if (pair_requested) {  // this trial without X' s, the next one with it
            pair_requested = false;
            double first_loss = 0.0;
            pair_sums = fused_pair_trial(P, change, ws.pair_change.data(), r, candidate_residual,
                                         ws.pair_residual.data(), &first_loss);
            pair_ready = true;
            ++P.paired_trials;
            trial_residual = nullptr;
            return first_loss / P.weight_sum + memory_value(P, candidate);
        }
        const bool speculate = trials_this_iteration > 1 || trials_last_iteration <= 1;
        trial_residual = speculate ? candidate_residual : nullptr;
        return by_pass(fused_trial(P, change, r, candidate_residual, speculate), candidate);
    }
    // f at a trial a pass evaluated; its sums kept for the gradient and a
    // model built at it.
    double by_pass(const TrialSums& sums, const T* candidate) {
        trial_score_sum = sums.score_sum;
        trial_loss = sums.loss;
        return sums.loss / P.weight_sum + memory_value(P, candidate);
    }
};

// On return ws.theta holds theta_hat and ws.residual its residual; when a
// local model served, `gram` represents its Gram's weights (the Gram
// updates it took are counted in `diagnostics`).
template <class T>
SolverResult lamm(const Problem<T>& P, Gram<T>& gram, const T* penalty_mask, double lambda_value, int max_iter,
                  double tol, core::UpdateDiagnostics& diagnostics) {
    FastLammEvaluator<T> evaluator{P, gram, diagnostics};
    const SolverResult result =
        lamm_iterations(evaluator, *P.ws, P.d, P.theta_prev, penalty_mask, lambda_value, max_iter, tol);
    if (evaluator.local.anchored()) {  // the residual at theta_hat, by a pass from the anchor
        Workspace<T>& ws = *P.ws;
        fused_trial(P, evaluator.local.change_from_anchor(ws.theta.data()), ws.anchor_residual.data(),
                    ws.residual.data(), false);
    }
    return result;
}

}  // namespace rh::cpu::fast

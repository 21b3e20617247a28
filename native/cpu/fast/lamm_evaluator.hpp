// The fast path's evaluator for the LAMM driver (core/lamm_driver.hpp).
//
// A majorization trial is one fused pass over X (fused_trial): its
// residual, loss and, speculatively, its X' s. Trials are accepted far more
// often than not, and an accepted trial's residual becomes the next
// iteration's, whose gradient then reuses that X' s: one pass over X per
// iteration instead of two.
//
// A trial's X' s is wasted when the trial is rejected. LAMM restarts every
// iteration at half the last accepted phi, and when the last iteration had
// to raise phi that first trial is usually rejected again: it is then run
// without the speculative product, and (where pairs_trials says it pays)
// together with the next trial, at twice its phi, in one read of X
// (fused_pair_trial).
//
// Once the steps are short (rows of up to kLocalMaxFeatures features), the
// trials need no pass at all: at an accepted point whose residual a pass
// computed, a LocalHuberModel is built for a ball around it, and every
// trial inside the ball is evaluated from the model (its gradient too,
// when accepted). A trial outside the ball is a pass from the model's
// anchor residual; when such a trial is accepted the model is dropped and
// may be rebuilt at that point.
#pragma once

#include <algorithm>
#include <cstdint>
#include <utility>

#include "core/lamm_driver.hpp"
#include "cpu/cpu_diagnostics.hpp"
#include "cpu/fast/fused_passes.hpp"
#include "cpu/fast/gram_cache.hpp"
#include "cpu/fast/local_huber_model.hpp"
#include "cpu/fast/memory_terms.hpp"
#include "cpu/fast/problem.hpp"
#include "cpu/fast/row_passes.hpp"

namespace rh::cpu::fast {

// How often the shortcuts served (tests check that they did).
struct LammShortcuts {
    int paired_trials = 0;       // pairs evaluated in one pass
    int local_model_builds = 0;
    int local_trials = 0;        // trials the local model evaluated
};

template <class T>
class LammEvaluator {
public:
    LammEvaluator(const Problem<T>& problem, Context<T>& context, GramCache<T>& gram, GramCounters& counters)
        : P(problem), C(context), gram_(gram), counters_(counters), local_(problem, context) {}

    double start(const T* theta) {
        T* r = C.ws.residual.data();
        const StartPass pass = start_residual(P, C, theta, r, false);
        trial_products_ = pass.scored;  // X' s(r) came with it
        trial_local_ = false;
        trial_score_sum_ = pass.sums.score_sum;
        trial_step_ = 0.0;  // no model at the start point: no step to size it by
        return objective_value(P, C, theta, r);
    }

    // A point the driver jumps to (amendment 0002's extrapolated point, or
    // back after a restart), `change` from the current point: evaluated as
    // an accepted trial is (a pass from the current residual, or from the
    // model's anchor while a local model serves), so its f and the trials
    // that follow it round alike. No local model or pending pair carries over.
    double move_to(const T* theta, const T* change) {
        FastBuffers<T>& ws = C.ws;
        pair_requested_ = pair_ready_ = false;
        const bool from_anchor = local_.active();
        local_.deactivate();
        const TrialSums sums =
            from_anchor ? fused_trial(P, C, local_.change_from_anchor(theta), ws.anchor_residual.data(),
                                      ws.candidate_residual.data())
                        : fused_trial(P, C, change, ws.residual.data(), ws.candidate_residual.data());
        const double value = by_pass(sums, theta);
        trial_products_ = true;
        trial_local_ = false;
        trial_step_ = 0.0;  // no model is built at a point the driver jumped to
        accept();
        return value;
    }

    void gradient(const T* theta, T* g) {
        FastBuffers<T>& ws = C.ws;
        const T* r = ws.residual.data();
        trials_last_iteration_ = trials_this_iteration_;
        trials_this_iteration_ = 0;
        if (trial_products_ && trial_local_) {  // accepted inside the model
            double score_sum = 0.0;
            local_.scores(theta, g, &score_sum);
            finish_gradient(P, C, theta, score_sum, g);
            return;
        }
        if (trial_products_) {  // accepted by a pass: r is exact, X' s(r) in ws.trial_products
            std::copy(ws.trial_products.data(), ws.trial_products.data() + P.features, g);
            local_.deactivate();
            if (P.options.local_models && P.features <= kLocalMaxFeatures && trial_step_ > 0.0 &&
                local_.build(gram_, counters_, theta, r, trial_loss_, g, trial_score_sum_, trial_step_))
                ++shortcuts.local_model_builds;
            finish_gradient(P, C, theta, trial_score_sum_, g);
            return;
        }
        const ScoreSums sums = scores(P, C, r, false);
        fast::gradient(P, C, theta, ws.weighted_score.data(), sums.score_sum, g);
    }

    double dot(const T* a, const T* b) const { return core::index_order_dot(P.d, a, b); }
    double norm(const T* x) const { return core::index_order_norm(P.d, x); }

    double trial(const T* candidate, const T* change, double phi, const core::LammProposal<T>& propose) {
        FastBuffers<T>& ws = C.ws;
        const T* r = ws.residual.data();
        T* candidate_residual = ws.candidate_residual.data();
        if (++trials_this_iteration_ == 1) {
            // The first trial of an iteration that is expected to be
            // rejected (the last iteration had to raise phi) is paired with
            // the next one (at 2 phi, proposed as the driver will propose
            // it): one pass evaluates both, and the second's result waits
            // here for the next trial.
            pair_ready_ = false;
            pair_requested_ = pairs_trials(P) && !local_.active() && trials_last_iteration_ > 1;
            if (pair_requested_) propose(propose.next_phi(phi), ws.pair_change.data() + P.d,
                                         ws.pair_change.data());
        }
        trial_step_ = norm(change);
        trial_local_ = false;
        if (local_.active()) {
            trial_products_ = true;
            if (local_.contains(candidate)) {
                trial_local_ = true;
                ++shortcuts.local_trials;
                return local_.loss(candidate) / P.weight_sum + memory_value(P, C, candidate);
            }
            // Outside the ball: a pass from the anchor (ws.residual is not
            // computed while the model serves).
            return by_pass(
                fused_trial(P, C, local_.change_from_anchor(candidate), ws.anchor_residual.data(), candidate_residual),
                candidate);
        }
        if (pair_ready_) {  // the pair's second trial: its change is the one proposed above
            pair_ready_ = false;
            std::swap(ws.candidate_residual, ws.pair_residual);  // its residual is now the candidate's
            trial_products_ = true;
            return by_pass(pair_sums_, candidate);
        }
        if (pair_requested_) {  // this trial without X' s, the next one with it
            pair_requested_ = false;
            double first_loss = 0.0;
            pair_sums_ = fused_pair_trial(P, C, change, ws.pair_change.data(), r, candidate_residual,
                                          ws.pair_residual.data(), &first_loss);
            pair_ready_ = true;
            ++shortcuts.paired_trials;
            trial_products_ = false;
            return first_loss / P.weight_sum + memory_value(P, C, candidate);
        }
        const bool speculate = trials_this_iteration_ > 1 || trials_last_iteration_ <= 1;
        trial_products_ = speculate;
        return by_pass(fused_trial(P, C, change, r, candidate_residual, speculate), candidate);
    }

    void accept() { std::swap(C.ws.residual, C.ws.candidate_residual); }

    // After the driver: ws.residual exact at theta_hat (by a pass from the
    // anchor when a local model served; then `gram` represents its Gram's
    // weights).
    void finish(const T* theta_hat) {
        if (local_.anchored())
            fused_trial(P, C, local_.change_from_anchor(theta_hat), C.ws.anchor_residual.data(),
                        C.ws.residual.data(), false);
    }

    LammShortcuts shortcuts;

private:
    // f at a trial a pass evaluated; its sums kept for the gradient and a
    // model built at it.
    double by_pass(const TrialSums& sums, const T* candidate) {
        trial_score_sum_ = sums.score_sum;
        trial_loss_ = sums.loss;
        return sums.loss / P.weight_sum + memory_value(P, C, candidate);
    }

    const Problem<T>& P;
    Context<T>& C;
    GramCache<T>& gram_;
    GramCounters& counters_;
    LocalHuberModel<T> local_;
    // The last trial (or the start point): whether ws.trial_products holds
    // its X' s (or, with trial_local_, the model stands for it), its sums
    // and the length of its change.
    bool trial_products_ = false;
    bool trial_local_ = false;
    double trial_score_sum_ = 0.0;
    double trial_loss_ = 0.0;
    double trial_step_ = 0.0;
    int trials_this_iteration_ = 0;
    int trials_last_iteration_ = 0;
    bool pair_requested_ = false;
    bool pair_ready_ = false;
    TrialSums pair_sums_{};
};

}  // namespace rh::cpu::fast

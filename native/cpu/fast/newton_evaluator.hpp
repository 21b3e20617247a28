// The fast path's evaluator for the damped-Newton driver
// (core/newton_driver.hpp):
//
// * the gradient and the Newton matrix from one scoring pass (or from the
//   pass that moved to the current point), the Gram kept incrementally
//   (gram_cache.hpp), the symmetric solve ladder;
// * Z step once per iteration, in a fused pass that also scores the full
//   step (t = 1) and forms X' s there (fused_step_product), so a taken full
//   step needs no further pass;
// * O(n) trials: the residual at t is r + t Z step, and the memory term a
//   quadratic in t (core::MemoryAlongStep); after a rejected full step the steps
//   the driver's search may try next (core::SearchSteps: the halvings, or
//   the majorizer's doublings) are evaluated kStepBatch per pass, each
//   step's loss bit for bit what a pass of its own gives.
//
// Its rounding differs from NumPy's, so where the reference's line search
// decides at the noise floor (true decrease below one ulp of F) the two may
// part by up to ~sqrt(eps |F| / lambda_min(H)); everywhere else they agree
// within the contract tolerances (tests/backends/test_native_cpu.py).
#pragma once

#include <algorithm>
#include <cstdint>
#include <utility>

#include "core/diagnostics.hpp"
#include "core/search_steps.hpp"
#include "core/solver_rules.hpp"
#include "cpu/cpu_diagnostics.hpp"
#include "cpu/fast/fused_passes.hpp"
#include "cpu/fast/gram_cache.hpp"
#include "cpu/fast/memory_terms.hpp"
#include "cpu/fast/problem.hpp"
#include "cpu/fast/row_passes.hpp"
#include "cpu/solve_ladder.hpp"

namespace rh::cpu::fast {

template <class T>
class NewtonEvaluator {
public:
    // gradient: d entries the evaluator may use (the driver's buffer).
    NewtonEvaluator(const Problem<T>& problem, Context<T>& context, GramCache<T>& gram, SolveLadder<T>& ladder,
                    GramCounters& counters, T* gradient)
        : P(problem),
          C(context),
          gram_(gram),
          ladder_(ladder),
          counters_(counters),
          gradient_(gradient),
          inverse_n_(1.0 / problem.weight_sum) {}

    double start(const T* theta) {
        T* r = C.ws.residual.data();
        const StartPass pass = start_residual(P, C, theta, r, true);
        products_current_ = pass.scored;  // ws.trial_products holds X' s(r)
        scores_current_ = pass.scored;
        current_scores_ = pass.sums;
        return objective_value(P, C, theta, r);
    }

    core::SolveRoute direction(const T* theta, T* step) {
        FastBuffers<T>& ws = C.ws;
        T* g = gradient_;
        T* r = ws.residual.data();
        // After a taken full step its pass already scored the residual kept.
        const ScoreSums sums = scores_current_ ? current_scores_ : scores(P, C, r, true);
        if (products_current_) {
            std::copy(ws.trial_products.data(), ws.trial_products.data() + P.features, g);
            finish_gradient(P, C, theta, sums.score_sum, g);
        } else {
            gradient(P, C, theta, ws.weighted_score.data(), sums.score_sum, g);
        }
        gram_.refresh(sums, counters_);
        newton_matrix(P, ws.gram.data(), ws.newton_matrix.data());
        const core::SolveRoute route = ladder_.solve_symmetric(P.d, ws.newton_matrix.data(), g, step);

        // Z step, once: the trial residual at t is r + t dz; the full step's
        // residual and scores come with it.
        full_step_ = fused_step_product(P, C, step, r, ws.design_step.data(), ws.candidate_residual.data());
        scores_current_ = false;
        memory_ = memory_along_step(P, C, theta, step);
        batch_count_ = 0;
        return route;
    }

    // step = M^-1 g with the gradient direction() formed (amendment 0002).
    // M's Gram Z' diag(w) Z is formed once per batch into its own buffer;
    // the cached Gram of w kappa(r) is left as it was.
    core::SolveRoute majorizer_direction(const T* theta, T* step) {
        FastBuffers<T>& ws = C.ws;
        if (!majorizer_ready_) {
            gram_.weighted_gram_into(P.w, ws.majorizer.data());
            newton_matrix(P, ws.majorizer.data(), ws.majorizer.data());  // entry by entry: in place
            majorizer_ready_ = true;
        }
        const core::SolveRoute route = ladder_.solve_symmetric(P.d, ws.majorizer.data(), gradient_, step);
        full_step_ = fused_step_product(P, C, step, ws.residual.data(), ws.design_step.data(),
                                        ws.candidate_residual.data());
        scores_current_ = false;
        memory_ = memory_along_step(P, C, theta, step);
        batch_count_ = 0;
        return route;
    }

    double trial(double t, const T*, double, const core::SearchSteps<T>& steps) {
        double loss = 0.0;
        if (t == 1.0) {
            if (full_step_.has_full_step_loss) {
                loss = full_step_.full_step_loss;  // summed by the step pass as data_losses sums it
            } else {
                const T one = T(1);
                data_losses(P, C, C.ws.residual.data(), C.ws.design_step.data(), &one, 1, &loss);
            }
        } else {
            loss = batched_loss(t, steps);
        }
        data_value_ = loss * inverse_n_;
        return data_value_ + memory_.at(t);
    }

    double accept(double t, const T* candidate, double) {
        FastBuffers<T>& ws = C.ws;
        products_current_ = t == 1.0;
        if (products_current_) {  // r + dz, scored, is r_next
            std::swap(ws.residual, ws.candidate_residual);
            scores_current_ = true;
            current_scores_ = full_step_;
        } else {  // a damped step: narrow rows score it (and X' s) as they advance
            products_current_ = advance_residual_scored(P, C, static_cast<T>(t), ws.design_step.data(),
                                                        ws.residual.data(), current_scores_);
            scores_current_ = products_current_;
        }
        // F of the accepted point as the next iteration's trials see it: the
        // data term of the residual kept, the memory term at the rounded
        // candidate (memory_.at(t) used the unrounded theta - t step; in
        // float32 the difference could exceed the last decreases and reject
        // every trial).
        return data_value_ + memory_value(P, C, candidate);
    }

    double norm(const T* x) const { return core::index_order_norm(P.d, x); }

    // The scoring pass of the final residual when one is at hand (for the
    // closing information update), else null.
    const ScoreSums* current_scores() const { return scores_current_ ? &current_scores_ : nullptr; }

private:
    // The loss at t != 1 from the pass that holds it: a new pass takes t
    // and up to kStepBatch - 1 steps the search may try after it.
    double batched_loss(double t, const core::SearchSteps<T>& steps) {
        for (int k = 0; k < batch_count_; ++k)
            if (batch_steps_[k] == t) return batch_losses_[k];
        batch_count_ = steps.upcoming(t, batch_steps_, kStepBatch);
        if (batch_count_ == 0) {  // t itself rounds to theta: asked anyway, one pass of its own
            batch_steps_[0] = t;
            batch_count_ = 1;
        }
        T scaled[kStepBatch];
        for (int k = 0; k < batch_count_; ++k) scaled[k] = static_cast<T>(batch_steps_[k]);
        data_losses(P, C, C.ws.residual.data(), C.ws.design_step.data(), scaled, batch_count_, batch_losses_);
        return batch_losses_[0];
    }

    const Problem<T>& P;
    Context<T>& C;
    GramCache<T>& gram_;
    SolveLadder<T>& ladder_;
    GramCounters& counters_;
    T* gradient_;
    double inverse_n_;
    // Whether ws.trial_products holds X' s of ws.residual, and whether
    // ws.weighted_score, ws.curvature and current_scores_ hold its scoring.
    bool products_current_ = false;
    bool scores_current_ = false;
    bool majorizer_ready_ = false;  // ws.majorizer holds M
    ScoreSums current_scores_;
    StepSums full_step_;
    core::MemoryAlongStep memory_;
    double data_value_ = 0.0;  // the last trial's data term
    double batch_steps_[kStepBatch] = {};
    double batch_losses_[kStepBatch] = {};
    int batch_count_ = 0;
};

}  // namespace rh::cpu::fast

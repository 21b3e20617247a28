// The batch's Huber loss near an anchor point, without a pass over X
// (fast LAMM, rows of up to kLocalMaxFeatures features: lamm_evaluator.hpp).
//
// At an anchor theta0 with exact residual r0 = y - Z theta0, every row is an
// inlier (|r| <= tau: loss r^2 / 2) or an outlier (loss tau |r| - tau^2 / 2).
// Moving to theta = theta0 + delta changes row i's residual by -z_i' delta,
// and |z_i' delta| <= ||z_i|| ||delta||. A row whose distance to the corner,
// | |r0_i| - tau |, exceeds R ||z_i|| therefore keeps its piece everywhere
// in the ball ||delta|| < R, where the sum of those "certain" rows' losses is
// exactly the quadratic
//
//     L_C(delta) = L0_C - delta' q_C + delta' G_C delta / 2,
//     q_C = sum_C w_i score(r0_i) z_i,   G_C = sum_{C, inlier} w_i z_i z_i',
//
// and their part of Z' (w score(r)) is q_C - G_C delta. The other rows (the
// "uncertain" set U, near a corner) are evaluated one by one from their
// gathered z_i, r0_i and w_i. So a majorization trial inside the ball costs
// O(d^2 + |U| d) instead of a pass over the n x d batch. The arithmetic
// rounds differently from a pass (the quadratic is formed once per anchor);
// mathematically the two are the same function.
//
// G_C is the batch's Gram with weights c_i = w_i [i certain inlier]: the
// model brings the fast path's Gram to those weights (a full Gram for the
// first model of a solve, the changed rows only for a later one), so the
// closing information update, too, starts from it incrementally (only the
// rows whose w kappa(r_hat) differs are re-added).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>

#include "cpu/cpu_diagnostics.hpp"
#include "cpu/fast/gram_cache.hpp"
#include "cpu/fast/problem.hpp"
#include "cpu/kernels/local_model_kernels.hpp"
#include "cpu/kernels/narrow_passes.hpp"

namespace rh::cpu::fast {

// The ball's radius in multiples of the last accepted LAMM step. The steps
// shrink by about half per iteration, so what is left of the path and the
// next iteration's first trial (at half phi, about the last step's length)
// fit inside 3 steps (the measurements are in docs/native-cpu.md).
inline constexpr double kLocalRadiusSteps = 3.0;
// A row is certain only when its distance to the corner exceeds the bound
// R ||z_i|| by this relative margin (the rounding of r and ||z_i||).
inline constexpr double kReachMargin = 1e-3;

template <class T>
class LocalHuberModel {
public:
    LocalHuberModel(const Problem<T>& problem, Context<T>& context) : P_(problem), C_(context) {}

    bool active() const noexcept { return active_; }
    void deactivate() noexcept { active_ = false; }
    // Whether a model was built during this solve (the anchor residual in
    // ws.anchor_residual stays valid from then on).
    bool anchored() const noexcept { return anchored_; }
    std::int64_t uncertain_rows() const noexcept { return uncertain_; }

    // Tries to build the model at theta0, whose exact residual is r0, data
    // loss loss0 = sum w loss(r0), and X' (w score(r0)) = product (p) with
    // sum w score(r0) = score_sum; radius = kLocalRadiusSteps * step.
    // Returns whether it did (not when too many rows would be uncertain).
    bool build(GramCache<T>& gram, GramCounters& counters, const T* theta0, const T* r0, double loss0,
               const T* product, double score_sum, double step) {
        FastBuffers<T>& ws = C_.ws;
        const std::int64_t n = P_.rows, p = P_.features, d = P_.d;
        const double radius = kLocalRadiusSteps * step;
        const std::int64_t limit = local_uncertain_limit(n);
        // The uncertain rows grow about in proportion to the radius: skip a
        // build the last count says would fail.
        if (!(radius > 0.0) || (last_radius_ > 0.0 && last_count_ * (radius / last_radius_) > 1.25 * limit))
            return false;
        // Certain rows keep a relative kReachMargin from the bound (rounding).
        const T reach = static_cast<T>(radius * (1.0 + kReachMargin));
        // Each part counts, then classifies, its own rows (their r, w and
        // panels are in its core's cache): its weights into ws.curvature
        // (free during LAMM), its uncertain rows' indices into its slice of
        // ws.local_index.
        const int parts = C_.row_parts(P_);
        std::int64_t counts[kMaxParts];
        for_each_part(C_.runner, parts, n, [&](int part, RowRange rows) {
            T* norms = ws.row_norms.data() + rows.begin;
            if (!norms_ready_ && P_.panels != nullptr)
                narrow_row_norms(rows.size(), p, P_.panels_of(rows.begin), P_.intercept, norms);
            else if (!norms_ready_)
                local_row_norms(rows.size(), p, P_.X + rows.begin * p, P_.intercept, norms);
            counts[part] = local_count_uncertain(rows.size(), r0 + rows.begin, norms, P_.tau, reach);
        });
        norms_ready_ = true;
        std::int64_t m = 0;
        for (int part = 0; part < parts; ++part) m += counts[part];
        last_radius_ = radius;
        last_count_ = static_cast<double>(m);
        if (m > limit) return false;
        std::int64_t changed[kMaxParts], weighted[kMaxParts];
        for_each_part(C_.runner, parts, n, [&](int part, RowRange rows) {
            local_classify_rows<T>({.n = rows.size(),
                                    .r = r0 + rows.begin,
                                    .w = P_.w + rows.begin,
                                    .norms = ws.row_norms.data() + rows.begin,
                                    .tau = P_.tau,
                                    .reach = reach,
                                    .c_gram = ws.gram_curvature.data() + rows.begin,
                                    .c = ws.curvature.data() + rows.begin,
                                    .index = ws.local_index.data() + rows.begin,
                                    .changed = &changed[part],
                                    .weighted = &weighted[part]});
        });
        ScoreSums weights;
        for (int part = 0; part < parts; ++part) {
            weights.changed += changed[part];
            weights.weighted_rows += weighted[part];
        }

        // The uncertain rows gathered, part after part.
        std::int64_t k = 0;
        for (int part = 0; part < parts; ++part) {
            const RowRange rows = part_rows(part, parts, n);
            GatheredRows<T> into = gathered(counts[part]);
            into.columns += k;
            into.r0 += k;
            into.w0 += k;
            local_gather_rows(P_.X + rows.begin * p, r0 + rows.begin, P_.w + rows.begin,
                              ws.local_index.data() + rows.begin, into);
            k += counts[part];
        }
        local_pad_rows(gathered(m));
        uncertain_ = m;
        // The certain rows' loss and scores: all rows' less the uncertain
        // rows' at delta = 0.
        double* q = ws.local_scores.data();
        double* own = ws.local_total.data();
        T* zero = ws.local_change.data();
        std::fill(zero, zero + d, T(0));
        const double uncertain_loss = rows_at(zero, own);
        for (std::int64_t j = 0; j < p; ++j) q[j] = static_cast<double>(product[j]) - own[j];
        if (P_.intercept) q[p] = score_sum - own[p];
        loss_certain_ = loss0 - uncertain_loss;
        // G_C: the Gram brought to the certain inliers' weights (in full the
        // first time, then incrementally from the last model's), which
        // become the Gram's weights (ws.gram_curvature).
        gram.refresh(weights, counters);
        const T* G = ws.gram.data();
        double* H = ws.local_gram.data();
        for (std::int64_t i = 0; i < d; ++i)
            for (std::int64_t j = i; j < d; ++j) H[i * d + j] = H[j * d + i] = static_cast<double>(G[i * d + j]);
        std::copy(theta0, theta0 + d, ws.anchor_theta.begin());
        if (r0 != ws.anchor_residual.data()) std::copy(r0, r0 + n, ws.anchor_residual.begin());
        radius_ = radius;
        active_ = anchored_ = true;
        return true;
    }

    // Whether theta lies in the ball (the model is exact there).
    bool contains(const T* theta) { return step_from_anchor(theta) < radius_; }

    // sum_i w_i loss(r_i(theta)) for theta in the ball.
    double loss(const T* theta) {
        FastBuffers<T>& ws = C_.ws;
        const std::int64_t d = P_.d;
        step_from_anchor(theta);
        const double* delta = ws.local_delta.data();
        const double* q = ws.local_scores.data();
        double linear = 0.0, quadratic = 0.0;
        for (std::int64_t i = 0; i < d; ++i) {
            quadratic += delta[i] * gram_row_times_delta(i);
            linear += delta[i] * q[i];
        }
        return loss_certain_ - linear + 0.5 * quadratic + rows_at(ws.local_change.data(), nullptr);
    }

    // Z' (w score(r(theta))) for theta in the ball: out[:p] and the
    // intercept's entry in *score_sum.
    void scores(const T* theta, T* out, double* score_sum) {
        FastBuffers<T>& ws = C_.ws;
        const std::int64_t d = P_.d, p = P_.features;
        step_from_anchor(theta);
        double* total = ws.local_total.data();
        rows_at(ws.local_change.data(), total);
        const double* q = ws.local_scores.data();
        for (std::int64_t i = 0; i < d; ++i) total[i] += q[i] - gram_row_times_delta(i);
        for (std::int64_t j = 0; j < p; ++j) out[j] = static_cast<T>(total[j]);
        *score_sum = P_.intercept ? total[p] : 0.0;
    }

    // theta - theta0 (d): a pass from the anchor residual with this change
    // gives the residual at theta.
    const T* change_from_anchor(const T* theta) {
        FastBuffers<T>& ws = C_.ws;
        T* change = ws.local_change.data();
        for (std::int64_t j = 0; j < P_.d; ++j) change[j] = theta[j] - ws.anchor_theta[j];
        return change;
    }

private:
    // ||theta - theta0||, the difference kept (in T for the uncertain rows,
    // in double for the quadratic) for loss / scores.
    double step_from_anchor(const T* theta) {
        FastBuffers<T>& ws = C_.ws;
        change_from_anchor(theta);
        double* delta = ws.local_delta.data();
        double sum = 0.0;
        for (std::int64_t j = 0; j < P_.d; ++j) {
            delta[j] = static_cast<double>(theta[j]) - static_cast<double>(ws.anchor_theta[j]);
            sum += delta[j] * delta[j];
        }
        return std::sqrt(sum);
    }

    // Row i of G_C times the step from the anchor (after step_from_anchor).
    double gram_row_times_delta(std::int64_t i) const {
        const FastBuffers<T>& ws = C_.ws;
        const std::int64_t d = P_.d;
        const double* H = ws.local_gram.data() + i * d;
        const double* delta = ws.local_delta.data();
        double sum = 0.0;
        for (std::int64_t j = 0; j < d; ++j) sum += H[j] * delta[j];
        return sum;
    }

    // The uncertain rows at the step `change` from the anchor (T, d):
    // their loss; with `total` (d), also their Z' (w score).
    double rows_at(const T* change, double* total) {
        return local_rows_pass(gathered(uncertain_), change, P_.tau, total);
    }

    // The gathered rows' layout in the buffers, for m rows.
    GatheredRows<T> gathered(std::int64_t m) {
        return {.m = m,
                .p = P_.features,
                .intercept = P_.intercept,
                .columns = C_.ws.local_columns.data(),
                .stride = local_column_stride(local_uncertain_limit(P_.rows)),
                .r0 = C_.ws.local_residual.data(),
                .w0 = C_.ws.local_weight.data()};
    }

    const Problem<T>& P_;
    Context<T>& C_;
    bool active_ = false, anchored_ = false, norms_ready_ = false;
    double loss_certain_ = 0.0, radius_ = 0.0;
    double last_radius_ = 0.0, last_count_ = 0.0;  // the last classification
    std::int64_t uncertain_ = 0;
};

}  // namespace rh::cpu::fast

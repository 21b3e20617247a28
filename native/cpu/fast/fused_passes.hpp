// The fast path's fused passes: one read of X (its panels for narrow rows,
// cache-resident blocks of rows otherwise) computes a product with X, the
// per-row Huber terms at the point it leads to, and speculatively X' s
// there, so that an accepted step or trial needs no further pass for the
// next gradient. Each pass's part results are combined in part order.
#pragma once

#include <algorithm>
#include <cstdint>

#include "cpu/fast/problem.hpp"
#include "cpu/fast/row_passes.hpp"
#include "cpu/kernels/fast_kernels.hpp"
#include "cpu/kernels/narrow_passes.hpp"
#include "cpu/platform/blas_provider.hpp"

namespace rh::cpu::fast {

// Bytes of X per block of the fused BLAS passes (wider rows): a block is
// read from memory by the first product and from cache by the second.
inline constexpr std::int64_t kFusedBlockBytes = std::int64_t{128} << 10;

template <class T>
std::int64_t fused_block_rows(const Problem<T>& P) {
    return std::max<std::int64_t>(16, kFusedBlockBytes / static_cast<std::int64_t>(sizeof(T) * P.features) &
                                          ~std::int64_t{15});
}

template <class T>
bool narrow_rows(const Problem<T>& P) {
    return P.features <= narrow_pass_max_features<T>;
}

// Whether LAMM pairs trials (fused_pair_trial) on this batch. Narrow rows
// always (their pair pass reads each row once, in registers). Wider rows
// read each block twice from cache, which saves only when X itself comes
// from memory, and a pair whose first trial is accepted after all has
// wasted its second: measured on the 2-core VM (32 MiB L3; A/B of the
// profiling driver in docs/performance-log.md), the 23.6 MB reference
// batch (float64) gained 5-9% per first update, the 4-8 MB wide batches
// lost 3-5%. Hence a size floor, FastOptions::wide_pair_min_bytes.
template <class T>
bool pairs_trials(const Problem<T>& P) {
    if (!P.options.pair_trials) return false;
    return narrow_rows(P) ||
           static_cast<double>(P.rows) * static_cast<double>(P.features) * sizeof(T) >=
               static_cast<double>(P.options.wide_pair_min_bytes);
}

template <class T>
PanelRows<T> panel_rows(const Problem<T>& P, RowRange rows) {
    return {rows.size(), P.features, P.panels_of(rows.begin)};
}

// A narrow scoring pass over every part: pass(rows, product) runs one part
// and returns its ScoreSums, its X' s going to `product` (the part's slot of
// ws.trial_products); the slots are added into part 0's, the sums in part
// order.
template <class T, class Pass>
ScoreSums scored_panel_passes(const Problem<T>& P, Context<T>& C, Pass&& pass) {
    const int parts = C.row_parts(P);
    const ScoreSums total = parallel_reduce<ScoreSums>(C.runner, parts, P.rows, [&](int part, RowRange rows) {
        return pass(rows, C.ws.trial_products.data() + part * P.features);
    });
    sum_trial_products(P, C, parts);
    return total;
}

// r = y - Z theta at the start of a solve. Narrow rows: from the panels, and
// in the same pass s = w score(r) (with_curvature: also c = w kappa(r)),
// their sums, and X' s into ws.trial_products (the first gradient's
// product): the pass scores the residual (`scored`). Wider rows: a GEMV only.
struct StartPass {
    bool scored = false;
    ScoreSums sums;
};

template <class T>
StartPass start_residual(const Problem<T>& P, Context<T>& C, const T* theta, T* r, bool with_curvature) {
    const std::int64_t p = P.features;
    if (!narrow_rows(P)) {
        residual(P, C, theta, r);
        return {};
    }
    const T b = P.intercept ? theta[p] : T(0);
    StartPass start;
    start.scored = true;
    start.sums = scored_panel_passes(P, C, [&](RowRange rows, T* product) {
        return narrow_residual_pass<T>({.rows = panel_rows(P, rows),
                                        .theta = theta,
                                        .b = b,
                                        .y = P.y + rows.begin,
                                        .scoring = scoring_at(P, C, rows.begin, with_curvature),
                                        .r = r + rows.begin,
                                        .product = product});
    });
    return start;
}

// Newton's damped step (t < 1): r += t dz. Narrow rows: in the same pass s,
// c = w kappa, their sums and X' s into ws.trial_products (what the next
// iteration's gradient and Gram need; returns true, as start_residual's
// `scored`). Wider rows: the update alone (false).
template <class T>
bool advance_residual_scored(const Problem<T>& P, Context<T>& C, T t, const T* dz, T* r, ScoreSums& sums) {
    if (!narrow_rows(P)) {
        advance_residual(P, C, t, dz, r);
        return false;
    }
    sums = scored_panel_passes(P, C, [&](RowRange rows, T* product) {
        return narrow_advance_pass<T>({.rows = panel_rows(P, rows),
                                       .t = t,
                                       .dz = dz + rows.begin,
                                       .r = r + rows.begin,
                                       .scoring = scoring_at(P, C, rows.begin, true),
                                       .product = product});
    });
    return true;
}

// Newton's Z step in one pass over X, per block of rows: dz = X step[:p] +
// step[p], and speculatively what the next iteration needs if the line
// search takes the full step (t = 1: the residual kept is then exactly
// r_next = r + dz): s and c = w kappa at r_next, their sums, and X' s into
// ws.trial_products. Narrow rows also give the line search's loss at t = 1,
// bit for bit data_losses at t = 1.
struct StepSums : ScoreSums {
    bool has_full_step_loss = false;
    double full_step_loss = 0.0;
};

template <class T>
StepSums fused_step_product(const Problem<T>& P, Context<T>& C, const T* step, const T* r, T* dz, T* r_next) {
    const std::int64_t p = P.features;
    const std::int64_t block_rows = fused_block_rows(P);
    const T b = P.intercept ? step[p] : T(0);
    const int parts = C.row_parts(P);
    const bool narrow = narrow_rows(P);
    ScoreSums partial[kMaxParts];
    double losses[kMaxParts];
    for_each_part(C.runner, parts, P.rows, [&](int part, RowRange rows) {
        T* product = C.ws.trial_products.data() + part * p;
        if (narrow) {  // one read of each row, in registers
            partial[part] = narrow_step_pass<T>({.rows = panel_rows(P, rows),
                                                 .step = step,
                                                 .b = b,
                                                 .r = r + rows.begin,
                                                 .scoring = scoring_at(P, C, rows.begin, true),
                                                 .dz = dz + rows.begin,
                                                 .r_next = r_next + rows.begin,
                                                 .product = product,
                                                 .loss = &losses[part]});
            return;
        }
        std::fill(product, product + p, T(0));
        ScoreSums sums;
        for (std::int64_t first = rows.begin; first < rows.end; first += block_rows) {
            const auto m = static_cast<blas::index_t>(std::min(rows.end, first + block_rows) - first);
            const T* block = P.X + first * p;
            blas::matvec(m, static_cast<blas::index_t>(p), block, step, dz + first);
            sums += full_step_rows<T>({.n = m,
                                       .r = r + first,
                                       .dz = dz + first,
                                       .b = b,
                                       .r_next = r_next + first,
                                       .scoring = scoring_at(P, C, first, true)});
            blas::matvec_transposed_accumulate(m, static_cast<blas::index_t>(p), block,
                                               C.ws.weighted_score.data() + first, product);
        }
        partial[part] = sums;
    });
    sum_trial_products(P, C, parts);
    StepSums total;
    for (int k = 0; k < parts; ++k) total += partial[k];
    if (narrow) {  // the parts' losses added as data_losses adds them
        total.has_full_step_loss = true;
        for (int k = 0; k < parts; ++k) total.full_step_loss += losses[k];
    }
    return total;
}

// One block of a wider rows' trial: dz = X change[:p] for the block's m rows
// from `first` (into dz), then the trial's rows (r_trial, s, the sums). dz
// may be r_trial itself (each row reads its dz before writing its residual).
template <class T>
TrialSums block_trial_rows(const Problem<T>& P, std::int64_t first, std::int64_t m, const T* change, T b,
                           const T* r, T* dz, T* r_trial, T* s) {
    const std::int64_t p = P.features;
    blas::matvec(static_cast<blas::index_t>(m), static_cast<blas::index_t>(p), P.X + first * p, change, dz + first);
    return trial_pass<T>({.n = m,
                          .r = r + first,
                          .dz = dz + first,
                          .b = b,
                          .w = P.w + first,
                          .tau = P.tau,
                          .r_trial = r_trial + first,
                          .s = s + first});
}

// One majorization trial of the fast LAMM in one pass over X: per block of
// rows, dz = X change[:p], r_trial = r - (dz + change[p]), its loss, and
// speculatively X' s_trial into ws.trial_products (part 0's slot holds the
// sum over the parts), so an accepted trial's gradient needs no pass.
template <class T>
TrialSums fused_trial(const Problem<T>& P, Context<T>& C, const T* change, const T* r, T* r_trial,
                      bool speculate = true) {
    const std::int64_t p = P.features;
    const std::int64_t block_rows = fused_block_rows(P);
    const T b = P.intercept ? change[p] : T(0);
    T* dz = C.ws.design_step.data();
    T* s = C.ws.weighted_score.data();
    const int parts = C.row_parts(P);
    const TrialSums total = parallel_reduce<TrialSums>(C.runner, parts, P.rows, [&](int part, RowRange rows) {
        T* product = speculate ? C.ws.trial_products.data() + part * p : nullptr;
        if (narrow_rows(P))  // one read of each row, in registers
            return narrow_trial_pass<T>({.rows = panel_rows(P, rows),
                                         .change = change,
                                         .b = b,
                                         .r = r + rows.begin,
                                         .w = P.w + rows.begin,
                                         .tau = P.tau,
                                         .r_trial = r_trial + rows.begin,
                                         .product = product});
        if (speculate) std::fill(product, product + p, T(0));
        TrialSums sums;
        for (std::int64_t first = rows.begin; first < rows.end; first += block_rows) {
            const auto m = static_cast<blas::index_t>(std::min(rows.end, first + block_rows) - first);
            sums += block_trial_rows(P, first, m, change, b, r, dz, r_trial, s);
            if (speculate)
                blas::matvec_transposed_accumulate(m, static_cast<blas::index_t>(p), P.X + first * p, s + first,
                                                   product);
        }
        return sums;
    });
    if (speculate) sum_trial_products(P, C, parts);
    return total;
}

// fused_pair_trial's wider rows, one part: per block, each trial's dz
// (into its residual buffer, which its rows then turn into the residual)
// and rows (the first's scores overwritten by the second's), then the
// second's X' s into `product`. Returns the second's sums and writes the
// first's into `first`.
template <class T>
TrialSums wide_pair_trial_rows(const Problem<T>& P, RowRange rows, const T* first_change, T b_first,
                               const T* second_change, T b_second, const T* r, T* r_first, T* r_second, T* s,
                               T* product, TrialSums& first) {
    const std::int64_t p = P.features;
    const std::int64_t block_rows = fused_block_rows(P);
    std::fill(product, product + p, T(0));
    TrialSums sums;
    first = TrialSums{};
    for (std::int64_t begin = rows.begin; begin < rows.end; begin += block_rows) {
        const auto m = static_cast<blas::index_t>(std::min(rows.end, begin + block_rows) - begin);
        first += block_trial_rows(P, begin, m, first_change, b_first, r, r_first, r_first, s);
        sums += block_trial_rows(P, begin, m, second_change, b_second, r, r_second, r_second, s);
        blas::matvec_transposed_accumulate(m, static_cast<blas::index_t>(p), P.X + begin * p, s + begin, product);
    }
    return sums;
}

// Two majorization trials of the fast LAMM in one read of X: the first
// (`first_change`) without X' s, its residual into r_first and its loss
// returned in *first_loss; the second as fused_trial with X' s (returned).
// Narrow rows: one pass over the panels. Wider rows: per cache-resident
// block of rows, each trial's product and rows (the second reads the block
// from cache), then the second's X' s, in fused_trial's blocks and kernels. Each residual and loss is bit for bit what fused_trial gives for
// its trial.
template <class T>
TrialSums fused_pair_trial(const Problem<T>& P, Context<T>& C, const T* first_change, const T* second_change,
                           const T* r, T* r_first, T* r_second, double* first_loss) {
    const std::int64_t p = P.features;
    const T b_first = P.intercept ? first_change[p] : T(0);
    const T b_second = P.intercept ? second_change[p] : T(0);
    const int parts = C.row_parts(P);
    TrialSums partial[kMaxParts], first_partial[kMaxParts];
    for_each_part(C.runner, parts, P.rows, [&](int part, RowRange rows) {
        T* product = C.ws.trial_products.data() + part * p;
        if (!narrow_rows(P)) {
            partial[part] = wide_pair_trial_rows(P, rows, first_change, b_first, second_change, b_second, r,
                                                 r_first, r_second, C.ws.weighted_score.data(), product,
                                                 first_partial[part]);
            return;
        }
        partial[part] = narrow_pair_trial_pass<T>({.rows = panel_rows(P, rows),
                                                   .first_change = first_change,
                                                   .first_b = b_first,
                                                   .second_change = second_change,
                                                   .second_b = b_second,
                                                   .r = r + rows.begin,
                                                   .w = P.w + rows.begin,
                                                   .tau = P.tau,
                                                   .r_first = r_first + rows.begin,
                                                   .r_second = r_second + rows.begin,
                                                   .product = product,
                                                   .first_sums = &first_partial[part]});
    });
    sum_trial_products(P, C, parts);
    TrialSums total;
    double first_total = 0.0;
    for (int k = 0; k < parts; ++k) {
        total += partial[k];
        first_total += first_partial[k].loss;
    }
    *first_loss = first_total;
    return total;
}

}  // namespace rh::cpu::fast

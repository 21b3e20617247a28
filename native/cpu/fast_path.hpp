// The fast kernel path (kernel_choice.hpp, docs/native-cpu.md): the same
// contract as the reference-order path (ALGORITHM.md), arranged for speed
// rather than for NumPy's rounding:
//
// * no design copy: Z = [X, 1] is never formed; the intercept column enters
//   every product as a scalar (Z theta = X theta[:p] + theta[p],
//   Z' s = (X' s, sum s));
// * one O(n) pass per gradient evaluation forms w*score(r), w*kappa(r), the
//   intercept sum and the count of rows whose Newton weight changed; the
//   O(n p) products are BLAS GEMV;
// * one memory pass over X per iteration where the contract allows it:
//   Newton's Z step and a LAMM trial are computed per block of rows that
//   stays in cache, and the same block immediately gives X' s at the point
//   the step leads to (Newton's full step, the LAMM trial); when that point
//   is accepted the next gradient reuses it (fused_step_product,
//   fused_trial);
// * the weighted Gram Z' diag(w kappa) Z is a SYRK of the sqrt(c)-scaled rows
//   with c > 0 (gathered block by block, each block SYRKed while it is in
//   cache), computed in full once and then updated
//   incrementally: only rows whose c changed are re-added with
//   sqrt(|delta|)-scaled rows and SYRK alpha = +1 / -1. A full recompute
//   happens when the gram is not valid yet, when the changed rows are many
//   (more than a quarter of the batch or half of the weighted rows) or after
//   kMaxIncrementalUpdates incremental updates in a row (bounds drift). The
//   information update J_new = J_prev + Z' diag(w kappa(r_hat)) Z starts
//   from the last Newton Gram the same way;
// * Newton systems: Cholesky first on the upper triangle, LU and SVD
//   least squares as fallbacks (solve_symmetric_with_fallback);
// * O(n) backtracking: Z step is formed once per Newton iteration; a trial
//   t costs one pass over r + t * Z step, and the memory term is a
//   quadratic in t with coefficients formed once per iteration.
//
// Its rounding differs from NumPy's, so where the reference's line search
// decides at the noise floor (true decrease below one ulp of F) the two may
// part by up to ~sqrt(eps |F| / lambda_min(H)); everywhere else they agree
// within the contract tolerances (tests/backends/test_native_cpu.py).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <utility>

#include "core/diagnostics.hpp"
#include "cpu/blas_provider.hpp"
#include "cpu/fast_kernels.hpp"
#include "cpu/narrow_gram.hpp"
#include "cpu/narrow_passes.hpp"
#include "cpu/solve_ladder.hpp"
#include "cpu/solver_result.hpp"
#include "cpu/worker_pool.hpp"
#include "cpu/workspace.hpp"

namespace rh::cpu::fast {

inline constexpr double kSmallestStep = 1e-8;
// Bytes of gathered weighted rows per block of a full Gram recompute
// (cache-resident between the gather and its SYRK).
inline constexpr std::int64_t kGramBlockBytes = std::int64_t{256} << 10;
// Incremental Gram updates allowed between two full recomputes.
inline constexpr int kMaxIncrementalUpdates = 32;

template <class T>
struct Problem {
    std::int64_t rows = 0;
    std::int64_t features = 0;  // p
    std::int64_t d = 0;         // p + intercept
    bool intercept = true;
    const T* X = nullptr;       // rows x p, row-major (the caller's buffer)
    // Column panels of X for the narrow passes (p <= narrow_pass_max_features),
    // built by the engine while it tested X (Engine::scan_rows); row
    // begin's panels at panels + begin * panel_columns.
    T* panels = nullptr;
    std::int64_t panel_columns = 0;
    const T* y = nullptr;
    const T* w = nullptr;
    const T* theta_prev = nullptr;
    const T* information_prev = nullptr;  // J_prev, d x d
    const T* history_direction = nullptr; // sign(theta_prev) * mask
    bool uses_history = false;
    double history_coefficient = 0.0;     // (Wprev / N) previous_lambda
    double weight_sum = 1.0;              // N
    T tau = T(1);
    T bandwidth = T(1);
    T ridge = T(0);
    Workspace<T>* ws = nullptr;
    // Row-parallel passes: up to `threads` parts on `pool` (BLAS itself runs
    // single-threaded inside the fast path; see Engine::update).
    WorkerPool* pool = nullptr;
    int threads = 1;  // fixes the row partition: results never depend on who ran a part
    // LAMM: evaluate an iteration's first trial, when it is expected to be
    // rejected, together with the next one (narrow rows; the results are
    // bit for bit the same either way: tests switch it off to compare).
    bool pair_trials = true;
    mutable int paired_trials = 0;  // pairs evaluated
    // LAMM: evaluate trials near an accepted point from a local Huber model
    // (narrow rows; local_huber_model.hpp; tests switch it off to compare).
    bool local_models = true;
    mutable int local_model_builds = 0;
    mutable int local_trials = 0;  // trials the model evaluated
    // Whether ws.weighted_score, ws.curvature and current_scores hold the
    // score pass of ws.residual (Newton's accepted full step computed them).
    mutable bool scores_current = false;
    mutable ScoreSums current_scores;
    mutable bool serial = false;    // run every part on the calling thread
    mutable int late_workers = 0;  // dispatches whose worker parts the caller had to run
    mutable int sleeping_workers = 0;  // of those, the ones whose workers were asleep
    mutable int dispatches = 0;
};

// Elements (rows x columns) a part must have before a pass is split; below
// it the dispatch costs more than it saves (measured, docs/native-cpu.md).
inline constexpr int kMaxParts = 64;
inline constexpr std::int64_t kParallelProductElements = std::int64_t{1} << 15;
inline constexpr std::int64_t kParallelGramFlops = std::int64_t{1} << 19;

inline int parts_for(int threads, std::int64_t work, std::int64_t per_part) {
    if (threads <= 1) return 1;
    const std::int64_t parts = std::min<std::int64_t>({threads, work / per_part, kMaxParts});
    return parts < 2 ? 1 : static_cast<int>(parts);
}

template <class T>
int parts_for(const Problem<T>& P, std::int64_t work, std::int64_t per_part) {
    return P.pool == nullptr ? 1 : parts_for(P.threads, work, per_part);
}

// Runs the parts on the pool. Two dispatches in which awake workers did not
// show up (their cores busy elsewhere, e.g. with another library's spinning
// BLAS threads) make the calling thread run the rest of the update's parts
// itself; so do kMaxSleepingDispatches in which they were still asleep (a
// worker that never gets a core never wakes). A worker found asleep is
// woken by that dispatch and normally takes the next one: counting it
// like an awake one made an update that began with sleeping workers run
// serially to its end, and the next one begin with sleeping workers again
// (measured: 4,096 x 16 f64 l1 fits stuck at ~450 us instead of ~270 us).
// The partition stays the one `threads` fixed and the parts' results are
// combined in part order, so the result is bit-identical whoever ran them.
inline constexpr int kMaxSleepingDispatches = 8;

template <class T, class Task>
void run_parts(const Problem<T>& P, int parts, Task& task) {
    if (parts > 1) ++P.dispatches;
    if (P.serial) {
        for (int part = 0; part < parts; ++part) task(part);
        return;
    }
    switch (P.pool->run(parts, task)) {
        case WorkerPool::Dispatch::on_time: break;
        case WorkerPool::Dispatch::late_awake:
            ++P.late_workers;
            if (P.late_workers - P.sleeping_workers >= 2) P.serial = true;
            break;
        case WorkerPool::Dispatch::late_asleep:
            ++P.late_workers;
            if (++P.sleeping_workers >= kMaxSleepingDispatches) P.serial = true;
            break;
    }
}

// [begin, end) of part `part` of `parts` over n rows (multiples of 16 rows).
inline void row_range(int part, int parts, std::int64_t n, std::int64_t& begin, std::int64_t& end) {
    auto edge = [&](int k) {
        if (k >= parts) return n;
        const std::int64_t e = (n * k / parts) & ~std::int64_t{15};
        return std::min(e, n);
    };
    begin = edge(part);
    end = edge(part + 1);
}

// Parts of the passes over rows: the O(n) passes split rows like the passes
// over X, so each thread touches the rows (and their r, s, c) it already
// holds in its cache: a serial pass after a parallel one would pull the
// other core's half of every row-sized buffer across (measured: a 4,096 x
// 16 Newton update ran slower on two threads than on one).
inline int row_parts(int threads, std::int64_t rows, std::int64_t features) {
    return parts_for(threads, rows * std::max<std::int64_t>(features, 1), kParallelProductElements);
}

template <class T>
int row_parts(const Problem<T>& P) {
    return P.pool == nullptr ? 1 : row_parts(P.threads, P.rows, P.features);
}

// out[rows] = X[rows] v (each part one single-threaded GEMV on its rows).
template <class T>
void product_rows(const Problem<T>& P, const T* v, T* out) {
    const int parts = row_parts(P);
    auto task = [&](int part) {
        std::int64_t begin, end;
        row_range(part, parts, P.rows, begin, end);
        if (end > begin)
            blas::matvec(static_cast<blas::index_t>(end - begin), static_cast<blas::index_t>(P.features),
                         P.X + begin * P.features, v, out + begin);
    };
    run_parts(P, parts, task);
}

// ---------------------------------------------------------------- O(n) passes

// out = y - (X theta[:p] + theta[p]).
template <class T>
void residual(const Problem<T>& P, const T* theta, T* out) {
    product_rows(P, theta, out);
    residual_from_product(P.rows, P.y, P.intercept ? theta[P.features] : T(0), out);
}

template <class T>
ScoreSums scores(const Problem<T>& P, const T* r, bool with_curvature) {
    Workspace<T>& ws = *P.ws;
    T* c = with_curvature ? ws.curvature.data() : nullptr;
    const int parts = row_parts(P);
    if (parts == 1)
        return score_pass(P.rows, r, P.w, P.tau, P.bandwidth, ws.weighted_score.data(), c, ws.gram_curvature.data());
    ScoreSums partial[kMaxParts];
    auto task = [&](int part) {
        std::int64_t begin, end;
        row_range(part, parts, P.rows, begin, end);
        partial[part] = score_pass(end - begin, r + begin, P.w + begin, P.tau, P.bandwidth,
                                   ws.weighted_score.data() + begin, c ? c + begin : nullptr,
                                   ws.gram_curvature.data() + begin);
    };
    run_parts(P, parts, task);
    ScoreSums total;
    for (int k = 0; k < parts; ++k) total += partial[k];
    return total;
}

// sum_i w_i loss(r_i), row-parallel for long batches.
template <class T>
double data_loss(const Problem<T>& P, const T* r) {
    const int parts = row_parts(P);
    if (parts == 1) return loss_sum(P.rows, r, static_cast<const T*>(nullptr), T(0), P.w, P.tau);
    double partial[kMaxParts];
    auto task = [&](int part) {
        std::int64_t begin, end;
        row_range(part, parts, P.rows, begin, end);
        partial[part] = loss_sum(end - begin, r + begin, static_cast<const T*>(nullptr), T(0), P.w + begin, P.tau);
    };
    run_parts(P, parts, task);
    double total = 0.0;
    for (int k = 0; k < parts; ++k) total += partial[k];
    return total;
}

// sum_i w_i loss(r_i + t[k] dz_i) at `count` (1..kStepBatch) steps in one
// pass: each out[k] is bit for bit what the same call with t[k] alone gives
// (loss_sums), the parts' sums added in part order.
template <class T>
void data_losses(const Problem<T>& P, const T* r, const T* dz, const T* t, int count, double* out) {
    const int parts = row_parts(P);
    if (parts == 1) {
        loss_sums(P.rows, r, dz, t, count, P.w, P.tau, out);
        return;
    }
    double partial[kMaxParts][kStepBatch];
    auto task = [&](int part) {
        std::int64_t begin, end;
        row_range(part, parts, P.rows, begin, end);
        loss_sums(end - begin, r + begin, dz + begin, t, count, P.w + begin, P.tau, partial[part]);
    };
    run_parts(P, parts, task);
    for (int k = 0; k < count; ++k) {
        double total = 0.0;
        for (int part = 0; part < parts; ++part) total += partial[part][k];
        out[k] = total;
    }
}

// r += t dz, in the passes' parts.
template <class T>
void advance_residual(const Problem<T>& P, T t, const T* dz, T* r) {
    const int parts = row_parts(P);
    auto task = [&](int part) {
        std::int64_t begin, end;
        row_range(part, parts, P.rows, begin, end);
        add_scaled(end - begin, t, dz + begin, r + begin);
    };
    run_parts(P, parts, task);
}

// ------------------------------------------------------------- d-sized parts

template <class T>
double dot(std::int64_t d, const T* a, const T* b) {
    double sum = 0.0;
    for (std::int64_t j = 0; j < d; ++j) sum += static_cast<double>(a[j]) * static_cast<double>(b[j]);
    return sum;
}

// out = J v for the d x d information matrix. Below kSmallInformation
// columns an inline loop: a library GEMV call costs more than the 17 x 17
// product itself (perf: ~5% of the latency update in dgemv calls).
inline constexpr std::int64_t kSmallInformation = 64;

template <class T>
void information_product(const Problem<T>& P, const T* v, T* out) {
    const std::int64_t d = P.d;
    const T* J = P.information_prev;
    if (d > kSmallInformation) {
        blas::matvec(static_cast<blas::index_t>(d), static_cast<blas::index_t>(d), J, v, out);
        return;
    }
    for (std::int64_t i = 0; i < d; ++i) {
        T sum = T(0);
#pragma omp simd reduction(+ : sum)
        for (std::int64_t j = 0; j < d; ++j) sum += J[i * d + j] * v[j];
        out[i] = sum;
    }
}

// The memory and history part of f at D = theta - theta_prev:
// 0.5 D' J D / N - c D' s. Uses ws.shift and ws.scratch.
template <class T>
double memory_value(const Problem<T>& P, const T* theta) {
    Workspace<T>& ws = *P.ws;
    const std::int64_t d = P.d;
    T* shift = ws.shift.data();
    T* scratch = ws.scratch.data();
    for (std::int64_t j = 0; j < d; ++j) shift[j] = theta[j] - P.theta_prev[j];
    information_product(P, shift, scratch);
    double value = 0.5 * dot(d, shift, scratch) / P.weight_sum;
    if (P.uses_history) value -= P.history_coefficient * dot(d, shift, P.history_direction);
    return value;
}

template <class T>
double objective_value(const Problem<T>& P, const T* theta, const T* r) {
    return data_loss(P, r) / P.weight_sum + memory_value(P, theta);
}

// grad f at theta from out[:p] = X' s and score_sum = sum s (s = w score(r)):
// g = (J_prev (theta - theta_prev) - Z' s) / N - c * history.
template <class T>
void finish_gradient(const Problem<T>& P, const T* theta, double score_sum, T* out) {
    Workspace<T>& ws = *P.ws;
    const std::int64_t d = P.d, p = P.features;
    T* shift = ws.shift.data();
    T* scratch = ws.scratch.data();
    for (std::int64_t j = 0; j < d; ++j) shift[j] = theta[j] - P.theta_prev[j];
    information_product(P, shift, scratch);
    if (P.intercept) out[p] = static_cast<T>(score_sum);
    const double inverse_n = 1.0 / P.weight_sum;
    for (std::int64_t j = 0; j < d; ++j) {
        double g = (static_cast<double>(scratch[j]) - static_cast<double>(out[j])) * inverse_n;
        if (P.uses_history) g -= P.history_coefficient * static_cast<double>(P.history_direction[j]);
        out[j] = static_cast<T>(g);
    }
}

// grad f from the scores s (and their sum) at theta.
template <class T>
void gradient(const Problem<T>& P, const T* theta, const T* s, double score_sum, T* out) {
    Workspace<T>& ws = *P.ws;
    const std::int64_t p = P.features;
    const int parts = row_parts(P);
    if (parts == 1) {
        blas::matvec_transposed(static_cast<blas::index_t>(P.rows), static_cast<blas::index_t>(p), P.X, s, out);
    } else {  // part k's X' s over its rows into its own p entries, then the sum
        T* partials = ws.partial_products.data();
        auto task = [&](int part) {
            std::int64_t begin, end;
            row_range(part, parts, P.rows, begin, end);
            T* target = part == 0 ? out : partials + (part - 1) * p;
            if (end > begin)
                blas::matvec_transposed(static_cast<blas::index_t>(end - begin), static_cast<blas::index_t>(p),
                                        P.X + begin * p, s + begin, target);
            else
                std::fill(target, target + p, T(0));
        };
        run_parts(P, parts, task);
        for (int k = 1; k < parts; ++k)
            for (std::int64_t j = 0; j < p; ++j) out[j] += partials[(k - 1) * p + j];
    }
    finish_gradient(P, theta, score_sum, out);
}

// Bytes of X per block of the fused BLAS passes: a block is read from
// memory by the first product and from cache by the second.
inline constexpr std::int64_t kFusedBlockBytes = std::int64_t{128} << 10;

template <class T>
std::int64_t fused_block_rows(const Problem<T>& P) {
    return std::max<std::int64_t>(16, kFusedBlockBytes / static_cast<std::int64_t>(sizeof(T) * P.features) &
                                          ~std::int64_t{15});
}

// Adds the parts' X' s of ws.trial_products into part 0's slot.
template <class T>
void sum_trial_products(const Problem<T>& P, int parts) {
    T* product = P.ws->trial_products.data();
    const std::int64_t p = P.features;
    for (int k = 1; k < parts; ++k)
        for (std::int64_t j = 0; j < p; ++j) product[j] += product[k * p + j];
}

// A narrow scoring pass over every part: pass(begin, end, product) runs
// one part's rows and returns its ScoreSums, its X' s going to `product`
// (the part's slot of ws.trial_products); the slots are then added into
// part 0's, and the sums in part order.
template <class T, class Pass>
ScoreSums scored_panel_passes(const Problem<T>& P, Pass&& pass) {
    const int parts = row_parts(P);
    ScoreSums partial[kMaxParts];
    auto task = [&](int part) {
        std::int64_t begin, end;
        row_range(part, parts, P.rows, begin, end);
        partial[part] = pass(begin, end, P.ws->trial_products.data() + part * P.features);
    };
    run_parts(P, parts, task);
    sum_trial_products(P, parts);
    ScoreSums total;
    for (int k = 0; k < parts; ++k) total += partial[k];
    return total;
}

// r = y - Z theta at the start of a solve. Narrow rows: from the column
// panels of X (P.panels), and in the same pass s = w score(r) into
// ws.weighted_score (with_curvature: also c = w kappa(r) into
// ws.curvature), their sums, and X' s into ws.trial_products (the first
// gradient's product): the pass scores the residual (`scored`). Wider
// rows: a GEMV only.
struct StartPass {
    bool scored = false;
    ScoreSums sums;
};

template <class T>
StartPass start_residual(const Problem<T>& P, const T* theta, T* r, bool with_curvature) {
    const std::int64_t p = P.features;
    if (p > narrow_pass_max_features<T>) {
        residual(P, theta, r);
        return {};
    }
    Workspace<T>& ws = *P.ws;
    const T b = P.intercept ? theta[p] : T(0);
    T* s = ws.weighted_score.data();
    T* c = with_curvature ? ws.curvature.data() : nullptr;
    const T* c_gram = ws.gram_curvature.data();
    StartPass start;
    start.scored = true;
    start.sums = scored_panel_passes(P, [&](std::int64_t begin, std::int64_t end, T* product) {
        return narrow_residual_pass(end - begin, p, P.panels + begin * P.panel_columns, theta, b, P.y + begin,
                                    P.w + begin, P.tau, P.bandwidth, c_gram + begin, r + begin, s + begin,
                                    c ? c + begin : nullptr, product);
    });
    return start;
}

// Newton's damped step (t < 1) on the residual: r += t dz. Narrow rows: in
// the same pass s, c = w kappa, their sums and X' s into ws.trial_products
// (what the next iteration's gradient and Gram need; returns true, as
// start_residual's `scored`). Wider rows: the update alone (false).
template <class T>
bool advance_residual_scored(const Problem<T>& P, T t, const T* dz, T* r, ScoreSums& sums) {
    const std::int64_t p = P.features;
    if (p > narrow_pass_max_features<T>) {
        advance_residual(P, t, dz, r);
        return false;
    }
    Workspace<T>& ws = *P.ws;
    T* s = ws.weighted_score.data();
    T* c = ws.curvature.data();
    const T* c_gram = ws.gram_curvature.data();
    sums = scored_panel_passes(P, [&](std::int64_t begin, std::int64_t end, T* product) {
        return narrow_advance_pass(end - begin, p, P.panels + begin * P.panel_columns, t, dz + begin, r + begin,
                                   P.w + begin, P.tau, P.bandwidth, c_gram + begin, s + begin, c + begin, product);
    });
    return true;
}

// Newton's Z step in one pass over X, per block of rows: dz = X step[:p] +
// step[p] (GEMV), and speculatively what the next iteration needs if the
// line search takes the full step (t = 1: the residual kept is then
// exactly r_next = r + dz): s and c = w kappa at r_next (ws.weighted_score,
// ws.curvature), their sums, and X' s (GEMV' of the same cache-resident
// rows) into ws.trial_products. Then neither the next gradient nor the
// next Gram needs a pass of its own. Narrow rows also give the line
// search's loss at t = 1, bit for bit data_losses at t = 1.
struct StepSums : ScoreSums {
    bool has_full_step_loss = false;
    double full_step_loss = 0.0;
};

template <class T>
StepSums fused_step_product(const Problem<T>& P, const T* step, const T* r, T* dz, T* r_next) {
    Workspace<T>& ws = *P.ws;
    const std::int64_t p = P.features;
    const std::int64_t block_rows = fused_block_rows(P);
    const T b = P.intercept ? step[p] : T(0);
    T* s = ws.weighted_score.data();
    T* c = ws.curvature.data();
    const T* c_gram = ws.gram_curvature.data();
    const int parts = row_parts(P);
    const bool narrow = p <= narrow_pass_max_features<T>;
    ScoreSums partial[kMaxParts];
    double losses[kMaxParts];
    auto task = [&](int part) {
        std::int64_t begin, end;
        row_range(part, parts, P.rows, begin, end);
        T* product = ws.trial_products.data() + part * p;
        if (narrow) {  // one read of each row, in registers
            partial[part] = narrow_step_pass(end - begin, p, P.panels + begin * P.panel_columns, step, b, r + begin,
                                             P.w + begin, P.tau, P.bandwidth, c_gram + begin, dz + begin,
                                             r_next + begin, s + begin, c + begin, product, &losses[part]);
            return;
        }
        std::fill(product, product + p, T(0));
        ScoreSums sums;
        for (std::int64_t first = begin; first < end; first += block_rows) {
            const auto m = static_cast<blas::index_t>(std::min(end, first + block_rows) - first);
            const T* rows = P.X + first * p;
            blas::matvec(m, static_cast<blas::index_t>(p), rows, step, dz + first);
            const ScoreSums block = full_step_rows(m, r + first, dz + first, b, P.w + first, P.tau, P.bandwidth,
                                                   c_gram + first, r_next + first, s + first, c + first);
            sums += block;
            blas::matvec_transposed_accumulate(m, static_cast<blas::index_t>(p), rows, s + first, product);
        }
        partial[part] = sums;
    };
    run_parts(P, parts, task);
    sum_trial_products(P, parts);
    StepSums total;
    for (int k = 0; k < parts; ++k) total += partial[k];
    if (narrow) {  // the parts' losses added as data_losses adds them
        total.has_full_step_loss = true;
        for (int k = 0; k < parts; ++k) total.full_step_loss += losses[k];
    }
    return total;
}

// One majorization trial of the fast LAMM in one pass over X: per block of
// rows, dz = X change[:p] (GEMV), r_trial = r - (dz + change[p]), its loss,
// and speculatively X' s_trial (GEMV' of the same, cache-resident rows) into
// ws.trial_products (part 0's slot holds the sum over the parts), so an
// accepted trial's gradient needs no further pass.
template <class T>
TrialSums fused_trial(const Problem<T>& P, const T* change, const T* r, T* r_trial, bool speculate = true) {
    Workspace<T>& ws = *P.ws;
    const std::int64_t p = P.features;
    const std::int64_t block_rows = fused_block_rows(P);
    const T b = P.intercept ? change[p] : T(0);
    T* dz = ws.design_step.data();
    T* s = ws.weighted_score.data();
    const int parts = row_parts(P);
    TrialSums partial[kMaxParts];
    auto task = [&](int part) {
        std::int64_t begin, end;
        row_range(part, parts, P.rows, begin, end);
        T* product = speculate ? ws.trial_products.data() + part * p : nullptr;
        if (p <= narrow_pass_max_features<T>) {  // one read of each row, in registers
            partial[part] = narrow_trial_pass(end - begin, p, P.panels + begin * P.panel_columns, change, b,
                                              r + begin, P.w + begin, P.tau, r_trial + begin, product);
            return;
        }
        if (speculate) std::fill(product, product + p, T(0));
        TrialSums sums;
        for (std::int64_t first = begin; first < end; first += block_rows) {
            const auto m = static_cast<blas::index_t>(std::min(end, first + block_rows) - first);
            const T* rows = P.X + first * p;
            blas::matvec(m, static_cast<blas::index_t>(p), rows, change, dz + first);
            const TrialSums block = trial_pass(m, r + first, dz + first, b, P.w + first, P.tau, r_trial + first,
                                               s + first);
            sums.loss += block.loss;
            sums.score_sum += block.score_sum;
            if (speculate)
                blas::matvec_transposed_accumulate(m, static_cast<blas::index_t>(p), rows, s + first, product);
        }
        partial[part] = sums;
    };
    run_parts(P, parts, task);
    if (speculate) sum_trial_products(P, parts);
    TrialSums total;
    for (int k = 0; k < parts; ++k) {
        total.loss += partial[k].loss;
        total.score_sum += partial[k].score_sum;
    }
    return total;
}

// Two majorization trials of the fast LAMM in one pass over the panels
// (narrow rows only): the first (`first_change`) without X' s, its
// residual into r_first and its loss returned in *first_loss; the second
// as fused_trial with X' s (returned). Each loss is bit for bit what
// fused_trial gives for its trial.
template <class T>
TrialSums fused_pair_trial(const Problem<T>& P, const T* first_change, const T* second_change, const T* r,
                           T* r_first, T* r_second, double* first_loss) {
    Workspace<T>& ws = *P.ws;
    const std::int64_t p = P.features;
    const T b_first = P.intercept ? first_change[p] : T(0);
    const T b_second = P.intercept ? second_change[p] : T(0);
    const int parts = row_parts(P);
    TrialSums partial[kMaxParts], first_partial[kMaxParts];
    auto task = [&](int part) {
        std::int64_t begin, end;
        row_range(part, parts, P.rows, begin, end);
        partial[part] = narrow_pair_trial_pass(end - begin, p, P.panels + begin * P.panel_columns, first_change,
                                               b_first, second_change, b_second, r + begin, P.w + begin, P.tau,
                                               r_first + begin, r_second + begin,
                                               ws.trial_products.data() + part * p, &first_partial[part]);
    };
    run_parts(P, parts, task);
    sum_trial_products(P, parts);
    TrialSums total;
    double first_total = 0.0;
    for (int k = 0; k < parts; ++k) {
        total.loss += partial[k].loss;
        total.score_sum += partial[k].score_sum;
        first_total += first_partial[k].loss;
    }
    *first_loss = first_total;
    return total;
}

// Fills the lower triangle of a row-major matrix from its upper triangle.
template <class T>
void mirror_upper(std::int64_t d, T* A) {
    for (std::int64_t i = 0; i < d; ++i)
        for (std::int64_t j = i + 1; j < d; ++j) A[j * d + i] = A[i * d + j];
}

// ------------------------------------------------------------ weighted Gram

// ws.gram (upper triangle, row-major) = Z' diag(c_gram) Z, kept in step with
// ws.gram_curvature (the weights it represents).
template <class T>
class Gram {
public:
    explicit Gram(const Problem<T>& problem) : P_(problem) {}

    // Brings the Gram to the weights `ws.curvature` (whose change count
    // against ws.gram_curvature and number of positive entries the caller's
    // score_pass measured), then makes them the Gram's weights.
    void refresh(const ScoreSums& sums, core::UpdateDiagnostics& diagnostics) {
        Workspace<T>& ws = *P_.ws;
        const std::int64_t n = P_.rows;
        const bool full = !valid_ || sums.changed * 4 > n || sums.changed * 2 > sums.weighted_rows ||
                          incremental_in_a_row_ >= kMaxIncrementalUpdates;
        if (full && sums.weighted_rows * 2 < n) {
            // Few rows weighted (a first batch's start from zero: ~23% at
            // 4,096 x 16): the Gram from zero by the changed-rows path,
            // which gathers and accumulates only the rows with c > 0,
            // instead of the in-place kernel's pass over every row.
            std::fill(ws.gram_curvature.begin(), ws.gram_curvature.begin() + n, T(0));
            const std::int64_t d = P_.d;
            T* G = ws.gram.data();
            for (std::int64_t i = 0; i < d; ++i) std::fill(G + i * d + i, G + (i + 1) * d, T(0));
            add_changes(ws.curvature.data(), ws.gram_curvature.data());
            ++diagnostics.gram_full_updates;
            incremental_in_a_row_ = 0;
            valid_ = true;
        } else if (full) {
            recompute(ws.curvature.data());
            ++diagnostics.gram_full_updates;
            incremental_in_a_row_ = 0;
            valid_ = true;
        } else if (sums.changed > 0) {
            add_changes(ws.curvature.data(), ws.gram_curvature.data());
            ++diagnostics.gram_incremental_updates;
            diagnostics.gram_changed_rows += sums.changed;
            ++incremental_in_a_row_;
        }
        std::swap(ws.curvature, ws.gram_curvature);
    }

    bool valid() const noexcept { return valid_; }

    // Full recompute: every row with c > 0, scaled by sqrt(c), one SYRK.
    void recompute(const T* c) {
        Workspace<T>& ws = *P_.ws;
        T* gathered = ws.weighted_design.data();
        const std::int64_t n = P_.rows, d = P_.d;
        const int parts = parts_for(P_, n * d * d, kParallelGramFlops);
        // Part k gathers its rows' weighted rows block by block into its own
        // region of the buffer (a block stays in cache between the gather
        // and its SYRK, so the weighted copy never travels to memory and
        // back) and accumulates them into its own Gram; the parts' upper
        // triangles are added.
        const auto dd = static_cast<blas::index_t>(d);
        const std::int64_t block_rows = std::max<std::int64_t>(
            64, kGramBlockBytes / static_cast<std::int64_t>(sizeof(T) * d) & ~std::int64_t{15});
        auto task = [&](int part) {
            std::int64_t begin, end;
            row_range(part, parts, n, begin, end);
            T* block = gathered + begin * d;
            T* target = part == 0 ? ws.gram.data() : ws.partial_grams.data() + (part - 1) * d * d;
            if (P_.features <= narrow_gram_max_features<T>) {  // in place, no gather
                for (std::int64_t i = 0; i < d; ++i) std::fill(target + i * d + i, target + (i + 1) * d, T(0));
                narrow_gram_accumulate(end - begin, P_.features, P_.intercept, P_.X + begin * P_.features,
                                       c + begin, T(1), target,
                                       ws.gram_scratch.data() + part * narrow_gram_scratch_size(d));
                return;
            }
            bool first = true;
            for (std::int64_t start = begin; start < end; start += block_rows) {
                const std::int64_t stop = std::min(end, start + block_rows);
                const std::int64_t m = gather_weighted_rows(stop - start, P_.features, P_.intercept,
                                                            P_.X + start * P_.features, c + start, block);
                if (m == 0) continue;
                if (first)
                    blas::gram_upper(static_cast<blas::index_t>(m), dd, block, target);
                else
                    blas::gram_upper_accumulate(static_cast<blas::index_t>(m), dd, block, T(1), target);
                first = false;
            }
            if (first)  // no weighted row in this part
                for (std::int64_t i = 0; i < d; ++i) std::fill(target + i * d + i, target + (i + 1) * d, T(0));
        };
        run_parts(P_, parts, task);
        add_partial_grams(parts);
    }

private:
    // Rows whose weight rose are gathered to the front of a buffer region,
    // rows whose weight fell to its back; two accumulations with alpha +-1
    // (the narrow kernel or SYRK). Split into the row passes' parts (each
    // part gathers its own rows into its own region and accumulates into its
    // own matrix, part 0's being the Gram itself; the others' upper
    // triangles are added in part order), so each thread reads the weights
    // and rows it already holds.
    void add_changes(const T* c_new, const T* c_old) {
        Workspace<T>& ws = *P_.ws;
        const std::int64_t n = P_.rows, d = P_.d;
        const int parts = row_parts(P_);
        auto task = [&](int part) {
            std::int64_t begin, end;
            row_range(part, parts, n, begin, end);
            T* region = ws.weighted_design.data() + begin * d;
            T* target = part == 0 ? ws.gram.data() : ws.partial_grams.data() + (part - 1) * d * d;
            if (part > 0)
                for (std::int64_t i = 0; i < d; ++i) std::fill(target + i * d + i, target + (i + 1) * d, T(0));
            const std::int64_t m = end - begin;
            std::int64_t rising = 0, falling = 0;
            gather_changed_rows(m, P_.features, P_.intercept, P_.X + begin * P_.features, c_new + begin,
                                c_old + begin, region, rising, falling);
            if (d <= narrow_gram_max_features<T>) {
                T* scratch = ws.gram_scratch.data() + part * narrow_gram_scratch_size(d);
                narrow_gram_accumulate(rising, d, false, region, static_cast<const T*>(nullptr), T(1), target,
                                       scratch);
                narrow_gram_accumulate(falling, d, false, region + (m - falling) * d,
                                       static_cast<const T*>(nullptr), T(-1), target, scratch);
                return;
            }
            const auto dd = static_cast<blas::index_t>(d);
            if (rising > 0)
                blas::gram_upper_accumulate(static_cast<blas::index_t>(rising), dd, region, T(1), target);
            if (falling > 0)
                blas::gram_upper_accumulate(static_cast<blas::index_t>(falling), dd, region + (m - falling) * d,
                                            T(-1), target);
        };
        run_parts(P_, parts, task);
        add_partial_grams(parts);
    }

    // ws.gram's upper triangle += the other parts' (part order).
    void add_partial_grams(int parts) {
        Workspace<T>& ws = *P_.ws;
        const std::int64_t d = P_.d;
        T* G = ws.gram.data();
        for (int k = 1; k < parts; ++k) {
            const T* other = ws.partial_grams.data() + (k - 1) * d * d;
            for (std::int64_t i = 0; i < d; ++i)
                for (std::int64_t j = i; j < d; ++j) G[i * d + j] += other[i * d + j];
        }
    }

    const Problem<T>& P_;
    bool valid_ = false;
    int incremental_in_a_row_ = 0;
};

// out (upper triangle) = (gram + J_prev) / N + ridge I.
template <class T>
void newton_matrix(const Problem<T>& P, const T* gram, T* out) {
    const std::int64_t d = P.d;
    const T inverse_n = static_cast<T>(1.0 / P.weight_sum);
    const T* J = P.information_prev;
    for (std::int64_t i = 0; i < d; ++i) {
        for (std::int64_t j = i; j < d; ++j) out[i * d + j] = (gram[i * d + j] + J[i * d + j]) * inverse_n;
        out[i * d + i] += P.ridge;
    }
}

template <class T>
double euclidean_norm(std::int64_t d, const T* x) {
    return std::sqrt(dot(d, x, x));
}

// ------------------------------------------------------------------ solvers

// Damped Newton (penalty "none"). On return ws.theta holds theta_hat,
// ws.residual its residual; `gram` represents the weights of the last
// Newton matrix.
template <class T>
SolverResult damped_newton(const Problem<T>& P, Gram<T>& gram, int max_iter, double tol,
                           core::UpdateDiagnostics& diagnostics) {
    Workspace<T>& ws = *P.ws;
    const std::int64_t d = P.d;
    T* theta = ws.theta.data();
    T* candidate = ws.candidate.data();
    T* step = ws.step.data();
    T* g = ws.gradient.data();
    T* r = ws.residual.data();
    T* dz = ws.design_step.data();
    T* s = ws.weighted_score.data();

    std::copy(P.theta_prev, P.theta_prev + d, theta);
    // ws.trial_products holds X' s(r) (from the start pass or a step's)
    const StartPass start = start_residual(P, theta, r, true);
    bool full_step_product = start.scored;
    double value = objective_value(P, theta, r);
    const double inverse_n = 1.0 / P.weight_sum;
    P.scores_current = start.scored;
    P.current_scores = start.sums;

    for (int iteration = 1; iteration <= max_iter; ++iteration) {
        // After a full step its pass already scored the residual kept.
        const ScoreSums sums = P.scores_current ? P.current_scores : scores(P, r, true);
        if (full_step_product) {
            std::copy(ws.trial_products.data(), ws.trial_products.data() + P.features, g);
            finish_gradient(P, theta, sums.score_sum, g);
        } else {
            gradient(P, theta, s, sums.score_sum, g);
        }
        gram.refresh(sums, diagnostics);
        newton_matrix(P, ws.gram.data(), ws.newton_matrix.data());
        diagnostics.record(solve_symmetric_with_fallback(d, ws.newton_matrix.data(), g, step, ws));

        // Z step, once: the trial residual at t is r + t * dz; the full
        // step's residual and scores come with it.
        T* r_next = ws.candidate_residual.data();
        const StepSums full_step = fused_step_product(P, step, r, dz, r_next);
        P.scores_current = false;
        // Memory and history terms along theta - t step: with D0 = theta -
        // theta_prev, D(t)'J D(t) = a - t b + t^2 c.
        T* shift = ws.shift.data();
        T* scratch = ws.scratch.data();
        for (std::int64_t j = 0; j < d; ++j) shift[j] = theta[j] - P.theta_prev[j];
        information_product(P, shift, scratch);  // J D0
        const double a = dot(d, shift, scratch), b1 = dot(d, step, scratch);
        information_product(P, step, scratch);   // J step
        const double b2 = dot(d, shift, scratch), c = dot(d, step, scratch);
        const double history0 = P.uses_history ? dot(d, shift, P.history_direction) : 0.0;
        const double history1 = P.uses_history ? dot(d, step, P.history_direction) : 0.0;
        auto memory_at = [&](double t) {
            double m = 0.5 * (a - t * (b1 + b2) + t * t * c) * inverse_n;
            if (P.uses_history) m -= P.history_coefficient * (history0 - t * history1);
            return m;
        };

        // The halvings of t in order, as ALGORITHM.md has them; the full step
        // alone (it is usually taken), then kStepBatch steps per pass (one
        // read of r and dz instead of one per halving; each step's loss is
        // the one a pass of its own gives).
        bool accepted = false;
        double t = 1.0, data_value = 0.0;
        while (t >= kSmallestStep && !accepted) {
            T steps[kStepBatch];
            int count = 0;
            bool rounds_to_theta = false;
            for (double u = t; count < (t == 1.0 ? 1 : kStepBatch) && u >= kSmallestStep; u /= 2.0) {
                // A candidate that rounds to theta itself has f(candidate) = F:
                // the plain-decrease test accepts it (as the reference does),
                // with a zero change, i.e. convergence.
                const T scaled = static_cast<T>(u);
                bool same = true;
                for (std::int64_t j = 0; j < d; ++j) same = same && theta[j] - scaled * step[j] == theta[j];
                if (same) {
                    rounds_to_theta = true;
                    break;
                }
                steps[count++] = scaled;
            }
            double losses[kStepBatch];
            if (t == 1.0 && count == 1 && full_step.has_full_step_loss)
                losses[0] = full_step.full_step_loss;  // summed by the step pass like data_losses sums it
            else if (count > 0)
                data_losses(P, r, dz, steps, count, losses);
            for (int k = 0; k < count; ++k, t /= 2.0) {
                data_value = losses[k] * inverse_n;
                if (data_value + memory_at(t) <= value) {
                    accepted = true;
                    break;
                }
            }
            if (!accepted && rounds_to_theta) return {iteration, true, value};
        }
        if (!accepted) return {iteration, false, value};

        const T scaled = static_cast<T>(t);
        for (std::int64_t j = 0; j < d; ++j) candidate[j] = theta[j] - scaled * step[j];
        full_step_product = t == 1.0;
        if (full_step_product) {  // r + dz, scored, is r_next
            std::swap(ws.residual, ws.candidate_residual);
            r = ws.residual.data();
            P.scores_current = true;
            P.current_scores = full_step;
        } else {  // a damped step: narrow rows score it (and X' s) as they advance
            full_step_product = advance_residual_scored(P, scaled, dz, r, P.current_scores);
            P.scores_current = full_step_product;
        }
        for (std::int64_t j = 0; j < d; ++j) step[j] = candidate[j] - theta[j];  // reuse as "diff"
        const double change = euclidean_norm(d, step);
        std::swap(ws.theta, ws.candidate);
        theta = ws.theta.data();
        candidate = ws.candidate.data();
        // F of the accepted point as the next iteration's trials will see it:
        // the data term of the residual kept, the memory term at the rounded
        // theta (memory_at(t) used the unrounded theta - t step; in float32 the
        // difference could exceed the last decreases and reject every trial).
        value = data_value + memory_value(P, theta);
        if (change <= tol * (1.0 + euclidean_norm(d, theta))) return {iteration, true, value};
    }
    return {max_iter, false, value};
}

// The closing information update of the fast path: ws.gram is brought to
// w kappa(r_hat) (incrementally from the last Newton Gram when cheaper),
// then next = J_prev + gram (mirrored to the full matrix).
template <class T>
void information_update(const Problem<T>& P, Gram<T>& gram, T* next_information,
                        core::UpdateDiagnostics& diagnostics) {
    Workspace<T>& ws = *P.ws;
    const std::int64_t d = P.d;
    const ScoreSums sums = P.scores_current ? P.current_scores : scores(P, ws.residual.data(), true);
    gram.refresh(sums, diagnostics);
    T* G = ws.gram.data();
    mirror_upper(d, G);
    const T* J = P.information_prev;
    for (std::int64_t k = 0; k < d * d; ++k) next_information[k] = J[k] + G[k];
}

}  // namespace rh::cpu::fast

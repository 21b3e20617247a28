// The fast path's passes over the rows of a batch (one pass each), split
// into the parts of parallel_reduce.hpp: X v, the residual, the scores, the
// data loss at one or several steps, and X' s.
#pragma once

#include <algorithm>
#include <cstdint>

#include "cpu/fast/problem.hpp"
#include "cpu/kernels/fast_kernels.hpp"
#include "cpu/platform/blas_provider.hpp"

namespace rh::cpu::fast {

// How the scoring of rows [begin, ...) writes s (and c) into the buffers.
template <class T>
RowScoring<T> scoring_at(const Problem<T>& P, Context<T>& C, std::int64_t begin, bool with_curvature) {
    return {.w = P.w + begin,
            .tau = P.tau,
            .h = P.bandwidth,
            .c_gram = C.ws.gram_curvature.data() + begin,
            .s = C.ws.weighted_score.data() + begin,
            .c = with_curvature ? C.ws.curvature.data() + begin : nullptr};
}

// out[rows] = X[rows] v (each part one single-threaded GEMV on its rows).
template <class T>
void product_rows(const Problem<T>& P, Context<T>& C, const T* v, T* out) {
    for_each_part(C.runner, C.row_parts(P), P.rows, [&](int, RowRange rows) {
        if (rows.size() > 0)
            blas::matvec(static_cast<blas::index_t>(rows.size()), static_cast<blas::index_t>(P.features),
                         P.X + rows.begin * P.features, v, out + rows.begin);
    });
}

// out = y - (X theta[:p] + theta[p]).
template <class T>
void residual(const Problem<T>& P, Context<T>& C, const T* theta, T* out) {
    product_rows(P, C, theta, out);
    residual_from_product(P.rows, P.y, P.intercept ? theta[P.features] : T(0), out);
}

// s = w score(r) (and c = w kappa(r) with its counts) into the buffers.
template <class T>
ScoreSums scores(const Problem<T>& P, Context<T>& C, const T* r, bool with_curvature) {
    const int parts = C.row_parts(P);
    if (parts == 1) return score_pass(P.rows, r, scoring_at(P, C, 0, with_curvature));
    return parallel_reduce<ScoreSums>(C.runner, parts, P.rows, [&](int, RowRange rows) {
        return score_pass(rows.size(), r + rows.begin, scoring_at(P, C, rows.begin, with_curvature));
    });
}

// sum_i w_i loss(r_i).
template <class T>
double data_loss(const Problem<T>& P, Context<T>& C, const T* r) {
    const int parts = C.row_parts(P);
    if (parts == 1) return loss_sum(P.rows, r, static_cast<const T*>(nullptr), T(0), P.w, P.tau);
    return parallel_reduce<double>(C.runner, parts, P.rows, [&](int, RowRange rows) {
        return loss_sum(rows.size(), r + rows.begin, static_cast<const T*>(nullptr), T(0), P.w + rows.begin, P.tau);
    });
}

// sum_i w_i loss(r_i + t[k] dz_i) at `count` (1..kStepBatch) steps in one
// pass: each out[k] is bit for bit what the same call with t[k] alone gives
// (loss_sums), the parts' sums added in part order.
template <class T>
void data_losses(const Problem<T>& P, Context<T>& C, const T* r, const T* dz, const T* t, int count, double* out) {
    const int parts = C.row_parts(P);
    if (parts == 1) {
        loss_sums(P.rows, r, dz, t, count, P.w, P.tau, out);
        return;
    }
    double partial[kMaxParts][kStepBatch];
    for_each_part(C.runner, parts, P.rows, [&](int part, RowRange rows) {
        loss_sums(rows.size(), r + rows.begin, dz + rows.begin, t, count, P.w + rows.begin, P.tau, partial[part]);
    });
    for (int k = 0; k < count; ++k) {
        double total = 0.0;
        for (int part = 0; part < parts; ++part) total += partial[part][k];
        out[k] = total;
    }
}

// r += t dz.
template <class T>
void advance_residual(const Problem<T>& P, Context<T>& C, T t, const T* dz, T* r) {
    for_each_part(C.runner, C.row_parts(P), P.rows,
                  [&](int, RowRange rows) { add_scaled(rows.size(), t, dz + rows.begin, r + rows.begin); });
}

// out[:p] = X' s (part k's X' s over its rows into its own p entries, then
// the parts added in part order).
template <class T>
void transposed_product(const Problem<T>& P, Context<T>& C, const T* s, T* out) {
    const std::int64_t p = P.features;
    const int parts = C.row_parts(P);
    if (parts == 1) {
        blas::matvec_transposed(static_cast<blas::index_t>(P.rows), static_cast<blas::index_t>(p), P.X, s, out);
        return;
    }
    T* partials = C.ws.partial_products.data();
    for_each_part(C.runner, parts, P.rows, [&](int part, RowRange rows) {
        T* target = part == 0 ? out : partials + (part - 1) * p;
        if (rows.size() > 0)
            blas::matvec_transposed(static_cast<blas::index_t>(rows.size()), static_cast<blas::index_t>(p),
                                    P.X + rows.begin * p, s + rows.begin, target);
        else
            std::fill(target, target + p, T(0));
    });
    for (int k = 1; k < parts; ++k)
        for (std::int64_t j = 0; j < p; ++j) out[j] += partials[(k - 1) * p + j];
}

// The parts' X' s of ws.trial_products added into part 0's slot.
template <class T>
void sum_trial_products(const Problem<T>& P, Context<T>& C, int parts) {
    T* product = C.ws.trial_products.data();
    const std::int64_t p = P.features;
    for (int k = 1; k < parts; ++k)
        for (std::int64_t j = 0; j < p; ++j) product[j] += product[k * p + j];
}

}  // namespace rh::cpu::fast

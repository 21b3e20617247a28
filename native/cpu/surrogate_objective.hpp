// The smooth surrogate objective of one batch, its gradient and Newton matrix
// (ALGORITHM.md, "Smooth surrogate objective"):
//
//   f(theta) = ( sum_i w_i loss(r_i) + 0.5 D' J_prev D ) / N  -  c D' s
//   grad f   = ( J_prev D - Z' (w * score(r)) ) / N             -  c s
//   H        = ( Z' diag(w * kappa(r)) Z + J_prev ) / N  +  ridge I
//
// Every expression keeps the NumPy reference's operation order, BLAS calls
// and summation order (see pairwise_sum.hpp), because the Newton line search
// compares f values whose true difference can be below one ulp: evaluated
// differently, a step the reference rejects would be accepted.
#pragma once

#include <cmath>
#include <cstdint>

#include "core/huber.hpp"
#include "cpu/blas_provider.hpp"
#include "cpu/pairwise_sum.hpp"
#include "cpu/workspace.hpp"

namespace rh::cpu {

template <class T>
struct SurrogateObjective {
    std::int64_t rows = 0;
    std::int64_t d = 0;
    const T* design = nullptr;      // Z, rows x d
    const T* response = nullptr;    // y
    const T* weights = nullptr;     // w
    const T* theta_prev = nullptr;  // d
    const T* information_prev = nullptr;  // J_prev, d x d
    const T* history_direction = nullptr; // s = sign(theta_prev) * mask
    bool uses_history = false;
    T history_coefficient = T(0);   // c = (Wprev / N) * previous_lambda
    T weight_sum = T(1);            // N in the model dtype, as NumPy divides by it
    T tau = T(1);
    T bandwidth = T(1);
    T ridge = T(0);
    Workspace<T>* workspace = nullptr;

    // out = y - Z theta (NumPy: `y - Z @ theta`).
    void residual(const T* theta, T* out) const {
        blas::matvec(static_cast<blas::index_t>(rows), static_cast<blas::index_t>(d), design, theta, out);
        for (std::int64_t i = 0; i < rows; ++i) out[i] = response[i] - out[i];
    }

    // f(theta) given r = y - Z theta.
    double value(const T* theta, const T* r) const {
        T* shift = workspace->shift.data();
        T* scratch = workspace->scratch.data();
        for (std::int64_t j = 0; j < d; ++j) shift[j] = theta[j] - theta_prev[j];
        const T tau_ = tau;
        const T* w = weights;
        const T data_sum = pairwise_sum<T>(rows, [=](std::int64_t i) { return w[i] * core::huber_loss(r[i], tau_); });
        const T data_term = data_sum / weight_sum;
        const auto n = static_cast<blas::index_t>(d);
        blas::vecmat(n, shift, information_prev, scratch);
        const T memory_term = (T(0.5) * blas::dot(n, scratch, shift)) / weight_sum;
        T total = data_term + memory_term;
        if (uses_history) total = total - history_coefficient * blas::dot(n, shift, history_direction);
        return static_cast<double>(total);
    }

    // out = grad f(theta) given r.
    void gradient(const T* theta, const T* r, T* out) const {
        T* shift = workspace->shift.data();
        T* scratch = workspace->scratch.data();
        T* weighted_score = workspace->weighted_score.data();
        for (std::int64_t j = 0; j < d; ++j) shift[j] = theta[j] - theta_prev[j];
        for (std::int64_t i = 0; i < rows; ++i) weighted_score[i] = weights[i] * core::huber_score(r[i], tau);
        const auto n = static_cast<blas::index_t>(d);
        blas::matvec(n, n, information_prev, shift, scratch);
        blas::matvec_transposed(static_cast<blas::index_t>(rows), n, design, weighted_score, out);
        for (std::int64_t j = 0; j < d; ++j) out[j] = (scratch[j] - out[j]) / weight_sum;
        if (uses_history)
            for (std::int64_t j = 0; j < d; ++j) out[j] = out[j] - history_coefficient * history_direction[j];
    }

    // gram = Z' diag(w kappa(r)) Z, full symmetric.
    //
    // SYRK touches one triangle and only rows with non-zero weight. Across
    // the iterations of a batch most rows keep their weight (kappa = 1 in the
    // quadratic zone), so once a Gram exists it is updated by the rows whose
    // weight changed: G += sum (c_new - c_old) z z', as two SYRKs on rows
    // sqrt(|dc|) z. A full rebuild runs when it is cheaper, when the update
    // would remove more weight than remains (cancellation), and after a few
    // updates in a row (bounding accumulated rounding).
    void weighted_gram(const T* r, T* gram) const {
        Workspace<T>& ws = *workspace;
        T* next = ws.next_curvature.data();
        T* previous = ws.curvature.data();
        std::int64_t nonzero = 0, changed = 0;
        T total = T(0), removed = T(0);  // only compared against each other: any summation order
#pragma omp simd reduction(+ : nonzero, changed, total, removed)
        for (std::int64_t i = 0; i < rows; ++i) {
            next[i] = weights[i] * core::smoothed_curvature(r[i], tau, bandwidth);
            nonzero += next[i] != T(0);
            changed += next[i] != previous[i];
            total += next[i];
            removed += previous[i] > next[i] ? previous[i] - next[i] : T(0);
        }
        // Incremental when it touches fewer rows than a rebuild and the weight it
        // removes is at most the weight that remains (cancellation <= ~2 eps |G|).
        const bool incremental = ws.gram_valid && ws.gram_incremental_updates < kMaxIncrementalGramUpdates &&
                                 changed < nonzero && removed <= total;
        if (incremental) {
            if (changed > 0) accumulate_weight_changes(previous, next);
            ++ws.gram_incremental_updates;
        } else {
            rebuild_gram(next);
            ws.gram_incremental_updates = 0;
        }
        ws.gram_valid = true;
        std::swap(ws.curvature, ws.next_curvature);
        const T* upper = ws.gram_upper.data();
        for (std::int64_t i = 0; i < d; ++i) {
            gram[i * d + i] = upper[i * d + i];
            for (std::int64_t j = i + 1; j < d; ++j) gram[i * d + j] = gram[j * d + i] = upper[i * d + j];
        }
    }

    // gram = Z' (Z * c) by GEMM, exactly the reference's `Z.T @ (Z * c[:, None])`.
    // The information matrix is carried from batch to batch, and LAMM paths
    // (stopped by a step-size test) amplify its rounding: a float32 stream
    // in the project corpus misses its tolerance when this Gram is formed by
    // SYRK on sqrt(c)-scaled rows. Once per batch, so the 2x flops are cheap.
    void information_gram(const T* r, T* gram) const {
        T* scaled = workspace->weighted_design.data();
        for (std::int64_t i = 0; i < rows; ++i) {
            const T c = weights[i] * core::smoothed_curvature(r[i], tau, bandwidth);
            const T* z = design + i * d;
            T* out = scaled + i * d;
            for (std::int64_t j = 0; j < d; ++j) out[j] = z[j] * c;
        }
        blas::gemm_transposed_left(static_cast<blas::index_t>(rows), static_cast<blas::index_t>(d), design, scaled,
                                   gram);
    }

    // Forget the cached Gram (a new batch).
    void reset_gram_cache() const { workspace->gram_valid = false; }

    // out = (gram(r) + J_prev) / N + ridge I.    // out = (gram(r) + J_prev) / N + ridge I.
    void newton_matrix(const T* r, T* out) const {
        T* gram = workspace->gram.data();
        weighted_gram(r, gram);
        for (std::int64_t k = 0; k < d * d; ++k) out[k] = (gram[k] + information_prev[k]) / weight_sum;
        for (std::int64_t j = 0; j < d; ++j) out[j * d + j] += ridge;
    }

private:
    static constexpr int kMaxIncrementalGramUpdates = 16;

    // Packs rows scale_i * z_i for rows with scale_i != 0; returns the count.
    template <class ScaleAt>
    std::int64_t pack_rows(T* packed, ScaleAt&& scale_at) const {
        std::int64_t kept = 0;
        for (std::int64_t i = 0; i < rows; ++i) {
            const T scale = scale_at(i);
            if (scale == T(0)) continue;
            const T* z = design + i * d;
            T* out = packed + kept * d;
            for (std::int64_t j = 0; j < d; ++j) out[j] = scale * z[j];
            ++kept;
        }
        return kept;
    }

    void rebuild_gram(const T* curvature) const {
        T* upper = workspace->gram_upper.data();
        T* packed = workspace->weighted_design.data();
        const std::int64_t kept = pack_rows(packed, [=](std::int64_t i) { return std::sqrt(curvature[i]); });
        if (kept == 0) {
            for (std::int64_t k = 0; k < d * d; ++k) upper[k] = T(0);
            return;
        }
        blas::gram_upper(static_cast<blas::index_t>(kept), static_cast<blas::index_t>(d), packed, upper);
    }

    void accumulate_weight_changes(const T* previous, const T* next) const {
        T* upper = workspace->gram_upper.data();
        T* packed = workspace->weighted_design.data();
        const auto n = static_cast<blas::index_t>(d);
        const std::int64_t grew = pack_rows(packed, [=](std::int64_t i) {
            return next[i] > previous[i] ? std::sqrt(next[i] - previous[i]) : T(0);
        });
        if (grew > 0) blas::gram_upper_accumulate(static_cast<blas::index_t>(grew), n, packed, T(1), upper);
        const std::int64_t shrank = pack_rows(packed, [=](std::int64_t i) {
            return next[i] < previous[i] ? std::sqrt(previous[i] - next[i]) : T(0);
        });
        if (shrank > 0) blas::gram_upper_accumulate(static_cast<blas::index_t>(shrank), n, packed, T(-1), upper);
    }
};

// ||x||_2 as NumPy's norm forms it: sqrt(dot(x, x)) in the model dtype.
template <class T>
double euclidean_norm(std::int64_t size, const T* x) {
    return static_cast<double>(std::sqrt(blas::dot(static_cast<blas::index_t>(size), x, x)));
}

}  // namespace rh::cpu

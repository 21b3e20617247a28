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
#include "cpu/platform/blas_provider.hpp"
#include "cpu/reference/pairwise_sum.hpp"
#include "cpu/reference/reference_buffers.hpp"

namespace rh::cpu::reference {

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
    ReferenceBuffers<T>* workspace = nullptr;

    // out = y - Z theta (NumPy: `y - Z @ theta`).
    void residual(const T* theta, T* out) const {
        blas::matvec(static_cast<blas::index_t>(rows), static_cast<blas::index_t>(d), design, theta, out);
        for (std::int64_t i = 0; i < rows; ++i) out[i] = response[i] - out[i];
    }

    // The rows' share of f (times N): sum_i w_i loss(r_i), pairwise in the
    // model dtype as NumPy sums.
    T data_loss(const T* r) const {
        const T tau_ = tau;
        const T* w = weights;
        return pairwise_sum<T>(rows, [=](std::int64_t i) { return w[i] * core::huber_loss(r[i], tau_); });
    }

    // The rows' share of the gradient (times -N): out = Z' (w * score(r)).
    void score_product(const T* r, T* out) const {
        T* weighted_score = workspace->weighted_score.data();
        for (std::int64_t i = 0; i < rows; ++i) weighted_score[i] = weights[i] * core::huber_score(r[i], tau);
        blas::matvec_transposed(static_cast<blas::index_t>(rows), static_cast<blas::index_t>(d), design,
                                weighted_score, out);
    }

    // f(theta) given r = y - Z theta.
    double value(const T* theta, const T* r) const {
        T* shift = workspace->shift.data();
        T* scratch = workspace->scratch.data();
        for (std::int64_t j = 0; j < d; ++j) shift[j] = theta[j] - theta_prev[j];
        const T data_term = data_loss(r) / weight_sum;
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
        for (std::int64_t j = 0; j < d; ++j) shift[j] = theta[j] - theta_prev[j];
        const auto n = static_cast<blas::index_t>(d);
        blas::matvec(n, n, information_prev, shift, scratch);
        score_product(r, out);
        for (std::int64_t j = 0; j < d; ++j) out[j] = (scratch[j] - out[j]) / weight_sum;
        if (uses_history)
            for (std::int64_t j = 0; j < d; ++j) out[j] = out[j] - history_coefficient * history_direction[j];
    }

    // gram = Z' diag(w kappa(r)) Z by GEMM, exactly the reference's
    // `Z.T @ (Z * c[:, None])`, in one fused pass forming Z * c. SYRK on
    // sqrt(c)-scaled rows (half the flops), and an incremental variant that
    // only re-adds rows whose weight changed, were measured and rejected:
    // their last-bit differences change noise-level line-search decisions
    // (randomized float64 differential tests missed rtol 1e-9 by up to 30x)
    // and the carried information matrix (a float32 LAMM corpus stream).
    void weighted_gram(const T* r, T* gram) const {
        gram_with_weights([=, this](std::int64_t i) { return weights[i] * core::smoothed_curvature(r[i], tau, bandwidth); },
                          gram);
    }

    // gram = Z' diag(w * score(r)^2) Z: the meat's data term (amendment 0003).
    void score_gram(const T* r, T* gram) const {
        gram_with_weights(
            [=, this](std::int64_t i) {
                const T s = core::huber_score(r[i], tau);
                return weights[i] * (s * s);
            },
            gram);
    }

    // out = (gram(r) + J_prev) / N + ridge I.
    void newton_matrix(const T* r, T* out) const {
        T* gram = workspace->gram.data();
        weighted_gram(r, gram);
        scaled_with_ridge(gram, out);
    }

    // out = M = (Z' diag(w) Z + J_prev) / N + ridge I, the Newton matrix with
    // curvature 1 on every row (amendment 0002; the reference's
    // `weighted_gram(Z, w)` and the same scaling).
    void majorizer_matrix(T* out) const {
        T* gram = workspace->gram.data();
        unit_gram(gram);
        scaled_with_ridge(gram, out);
    }

    // gram = Z' diag(w) Z (every row with curvature 1).
    void unit_gram(T* gram) const {
        gram_with_weights([=, this](std::int64_t i) { return weights[i]; }, gram);
    }

private:
    template <class RowWeight>
    void gram_with_weights(RowWeight&& row_weight, T* gram) const {
        T* scaled = workspace->weighted_design.data();
        for (std::int64_t i = 0; i < rows; ++i) {
            const T c = row_weight(i);
            const T* z = design + i * d;
            T* out = scaled + i * d;
            for (std::int64_t j = 0; j < d; ++j) out[j] = z[j] * c;
        }
        blas::gemm_transposed_left(static_cast<blas::index_t>(rows), static_cast<blas::index_t>(d), design, scaled,
                                   gram);
    }

    void scaled_with_ridge(const T* gram, T* out) const {
        for (std::int64_t k = 0; k < d * d; ++k) out[k] = (gram[k] + information_prev[k]) / weight_sum;
        for (std::int64_t j = 0; j < d; ++j) out[j * d + j] += ridge;
    }
};

// ||x||_2 as NumPy's norm forms it: sqrt(dot(x, x)) in the model dtype.
template <class T>
double reference_norm(std::int64_t size, const T* x) {
    return static_cast<double>(std::sqrt(blas::dot(static_cast<blas::index_t>(size), x, x)));
}

}  // namespace rh::cpu::reference

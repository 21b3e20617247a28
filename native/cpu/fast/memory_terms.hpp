// The d-sized parts of the fast path's surrogate objective (ALGORITHM.md):
// the memory and history terms of f and grad f, the Newton matrix from the
// Gram, and their products with the information matrix, in double where a
// sum runs over d.
#pragma once

#include <cmath>
#include <cstdint>

#include "core/memory_along_step.hpp"
#include "core/vector_sums.hpp"
#include "cpu/fast/problem.hpp"
#include "cpu/fast/row_passes.hpp"
#include "cpu/platform/blas_provider.hpp"

namespace rh::cpu::fast {

// out = J v for the d x d information matrix. Below kSmallInformation
// columns an inline loop: a library GEMV call costs more than the 17 x 17
// product itself.
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

// ws.shift = theta - theta_prev, ws.scratch = J_prev ws.shift.
template <class T>
void shift_and_information(const Problem<T>& P, Context<T>& C, const T* theta) {
    T* shift = C.ws.shift.data();
    for (std::int64_t j = 0; j < P.d; ++j) shift[j] = theta[j] - P.theta_prev[j];
    information_product(P, shift, C.ws.scratch.data());
}

// The memory and history part of f at D = theta - theta_prev:
// 0.5 D' J D / N - c D' s.
template <class T>
double memory_value(const Problem<T>& P, Context<T>& C, const T* theta) {
    shift_and_information(P, C, theta);
    const T* shift = C.ws.shift.data();
    double value = 0.5 * core::index_order_dot(P.d, shift, C.ws.scratch.data()) / P.weight_sum;
    if (P.uses_history) value -= P.history_coefficient * core::index_order_dot(P.d, shift, P.history_direction);
    return value;
}

// f(theta) given r = y - Z theta.
template <class T>
double objective_value(const Problem<T>& P, Context<T>& C, const T* theta, const T* r) {
    return data_loss(P, C, r) / P.weight_sum + memory_value(P, C, theta);
}

// grad f at theta from out[:p] = X' s and score_sum = sum s (s = w score(r)):
// g = (J_prev (theta - theta_prev) - Z' s) / N - c * history.
template <class T>
void finish_gradient(const Problem<T>& P, Context<T>& C, const T* theta, double score_sum, T* out) {
    const std::int64_t d = P.d, p = P.features;
    shift_and_information(P, C, theta);
    const T* scratch = C.ws.scratch.data();
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
void gradient(const Problem<T>& P, Context<T>& C, const T* theta, const T* s, double score_sum, T* out) {
    transposed_product(P, C, s, out);
    finish_gradient(P, C, theta, score_sum, out);
}

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

// The memory and history terms of f along theta - t step
// (core::MemoryAlongStep), its sums formed once per Newton iteration with
// BLAS products and index-order dots.
template <class T>
core::MemoryAlongStep memory_along_step(const Problem<T>& P, Context<T>& C, const T* theta, const T* step) {
    const std::int64_t d = P.d;
    const T* shift = C.ws.shift.data();
    T* scratch = C.ws.scratch.data();
    core::MemoryAlongStep m;
    shift_and_information(P, C, theta);  // J D0
    m.a = core::index_order_dot(d, shift, scratch);
    m.b1 = core::index_order_dot(d, step, scratch);
    information_product(P, step, scratch);  // J step
    m.b2 = core::index_order_dot(d, shift, scratch);
    m.c = core::index_order_dot(d, step, scratch);
    m.uses_history = P.uses_history;
    m.history0 = m.uses_history ? core::index_order_dot(d, shift, P.history_direction) : 0.0;
    m.history1 = m.uses_history ? core::index_order_dot(d, step, P.history_direction) : 0.0;
    m.inverse_n = 1.0 / P.weight_sum;
    m.history_coefficient = P.history_coefficient;
    return m;
}

// Fills the lower triangle of a row-major matrix from its upper triangle.
template <class T>
void mirror_upper(std::int64_t d, T* A) {
    for (std::int64_t i = 0; i < d; ++i)
        for (std::int64_t j = i + 1; j < d; ++j) A[j * d + i] = A[i * d + j];
}

}  // namespace rh::cpu::fast

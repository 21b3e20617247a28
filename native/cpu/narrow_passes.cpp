#include "cpu/narrow_passes.hpp"

#include <algorithm>

#include "core/multiversion.hpp"

namespace rh::cpu::fast {

namespace {

// 32-byte vectors (GCC/Clang vector extensions): 4 doubles or 8 floats; the
// baseline clone lowers them to pairs of 16-byte operations.
template <class T>
struct Vector32;
template <>
struct Vector32<double> {
    typedef double type __attribute__((vector_size(32)));
    typedef double unaligned __attribute__((vector_size(32), aligned(1), may_alias));
};
template <>
struct Vector32<float> {
    typedef float type __attribute__((vector_size(32)));
    typedef float unaligned __attribute__((vector_size(32), aligned(1), may_alias));
};

// One unaligned 32-byte load.
template <class T>
[[gnu::always_inline]] inline typename Vector32<T>::type load(const T* x) {
    return *reinterpret_cast<const typename Vector32<T>::unaligned*>(x);
}

template <class T>
inline T clip(T r, T tau) noexcept {
    return r < -tau ? -tau : (r > tau ? tau : r);
}

template <class T>
inline T huber_loss(T r, T tau, T half_tau_squared) noexcept {
    const T a = r < T(0) ? -r : r;
    return a <= tau ? (T(0.5) * r) * r : tau * a - half_tau_squared;
}

// The pass itself, for rows of at most K vectors. Rows go in groups of G
// (one vector's worth): each row's dot x_i . v from registers, then the
// group's per-row updates as one vector loop (update(i, m, dots, s) fills
// s[0..m) and stores whatever the pass keeps), then acc += s_i x_i from the
// same rows, which are still in L1. A row's loads may run past its end into
// the next row (those lanes meet zeros in v, and their lanes of acc are
// dropped); the last rows, whose loads would leave X, go one by one through
// a zero-padded copy.
template <class T, int K, bool kAccumulate, class Update>
[[gnu::always_inline]] inline void one_read_pass(std::int64_t n, std::int64_t p, const T* X, const T* v, T* product,
                                                 Update& update) {
    using V = typename Vector32<T>::type;
    constexpr std::int64_t L = static_cast<std::int64_t>(sizeof(V) / sizeof(T));
    constexpr std::int64_t W = K * L;
    constexpr int G = static_cast<int>(L);
    alignas(32) T padded[W] = {};
    std::copy(v, v + p, padded);
    V vv[K], acc[K];
#pragma GCC unroll 8
    for (int k = 0; k < K; ++k) {
        vv[k] = load(padded + k * L);
        acc[k] = V{};
    }
    // Lambdas are inlined so that they are compiled with the caller's
    // instruction set (a separate function would be built for the baseline).
    auto dot = [&](const T* x) __attribute__((always_inline)) {
        // Two partial sums halve the dependent FMA chain.
        V d = load(x) * vv[0];
        V e = K > 1 ? load(x + L) * vv[1] : V{};
#pragma GCC unroll 8
        for (int k = 2; k < K; k += 2) {
            d += load(x + k * L) * vv[k];
            if (k + 1 < K) e += load(x + (k + 1) * L) * vv[k + 1];
        }
        d += e;
        T sum = d[0];
#pragma GCC unroll 8
        for (std::int64_t l = 1; l < L; ++l) sum += d[l];
        return sum;
    };
    auto accumulate = [&](const T* x, T s) __attribute__((always_inline)) {
        if constexpr (kAccumulate) {
#pragma GCC unroll 8
            for (int k = 0; k < K; ++k) acc[k] += s * load(x + k * L);
        }
    };
    alignas(32) T dots[G], scores[G];
    // Rows whose W-wide loads stay inside the n x p array.
    const std::int64_t safe = n * p >= W ? std::min(n, (n * p - W) / p + 1) : 0;
    std::int64_t i = 0;
    for (; i + G <= safe; i += G) {
        const T* rows = X + i * p;
#pragma GCC unroll 8
        for (int g = 0; g < G; ++g) dots[g] = dot(rows + g * p);
        update(i, G, dots, scores);
#pragma GCC unroll 8
        for (int g = 0; g < G; ++g) accumulate(rows + g * p, scores[g]);
    }
    alignas(32) T tail[W];
    for (; i < n; ++i) {
        const T* x = X + i * p;
        if (i >= safe) {
            std::fill(tail, tail + W, T(0));
            std::copy(x, x + p, tail);
            x = tail;
        }
        dots[0] = dot(x);
        update(i, 1, dots, scores);
        accumulate(x, scores[0]);
    }
    if constexpr (kAccumulate) {
        alignas(32) T out[W];
#pragma GCC unroll 8
        for (int k = 0; k < K; ++k) *reinterpret_cast<V*>(out + k * L) = acc[k];
        std::copy(out, out + p, product);
    }
}

// Dispatches on the row's vector count (1..8); kAccumulate = false skips
// the X' s accumulation (product untouched).
template <bool kAccumulate = true, class T, class Update>
[[gnu::always_inline]] inline void dispatch(std::int64_t n, std::int64_t p, const T* X, const T* v, T* product,
                                            Update& update) {
    constexpr std::int64_t L = 32 / static_cast<std::int64_t>(sizeof(T));
    switch ((p + L - 1) / L) {
        case 1: one_read_pass<T, 1, kAccumulate>(n, p, X, v, product, update); break;
        case 2: one_read_pass<T, 2, kAccumulate>(n, p, X, v, product, update); break;
        case 3: one_read_pass<T, 3, kAccumulate>(n, p, X, v, product, update); break;
        case 4: one_read_pass<T, 4, kAccumulate>(n, p, X, v, product, update); break;
        case 5: one_read_pass<T, 5, kAccumulate>(n, p, X, v, product, update); break;
        case 6: one_read_pass<T, 6, kAccumulate>(n, p, X, v, product, update); break;
        case 7: one_read_pass<T, 7, kAccumulate>(n, p, X, v, product, update); break;
        default: one_read_pass<T, 8, kAccumulate>(n, p, X, v, product, update); break;
    }
}

}  // namespace

template <class T>
RH_MULTIVERSION void narrow_step_pass(std::int64_t n, std::int64_t p, const T* X, const T* step, T b, const T* r,
                                      const T* w, T tau, T* dz, T* s, T* product) {
    auto update = [&](std::int64_t i, int m, const T* dots, T* scores) __attribute__((always_inline)) {
#pragma omp simd
        for (int g = 0; g < m; ++g) {
            const T dzi = dots[g] + b;
            dz[i + g] = dzi;
            const T si = w[i + g] * clip(r[i + g] + dzi, tau);
            s[i + g] = si;
            scores[g] = si;
        }
    };
    dispatch(n, p, X, step, product, update);
}

template <class T>
RH_MULTIVERSION void narrow_residual_pass(std::int64_t n, std::int64_t p, const T* X, const T* theta, T b,
                                          const T* y, const T* w, T tau, T* r, T* s, T* product) {
    auto update = [&](std::int64_t i, int m, const T* dots, T* scores) __attribute__((always_inline)) {
#pragma omp simd
        for (int g = 0; g < m; ++g) {
            const T ri = y[i + g] - (dots[g] + b);
            r[i + g] = ri;
            const T si = w[i + g] * clip(ri, tau);
            s[i + g] = si;
            scores[g] = si;
        }
    };
    dispatch(n, p, X, theta, product, update);
}

template <class T>
RH_MULTIVERSION TrialSums narrow_trial_pass(std::int64_t n, std::int64_t p, const T* X, const T* change, T b,
                                            const T* r, const T* w, T tau, T* r_trial, T* s, T* product) {
    const T half_tau_squared = (T(0.5) * tau) * tau;
    double loss = 0.0, score = 0.0;
    auto update = [&](std::int64_t i, int m, const T* dots, T* scores) __attribute__((always_inline)) {
        T loss_group = T(0), score_group = T(0);
#pragma omp simd reduction(+ : loss_group, score_group)
        for (int g = 0; g < m; ++g) {
            const T ri = r[i + g] - (dots[g] + b);
            r_trial[i + g] = ri;
            const T si = w[i + g] * clip(ri, tau);
            s[i + g] = si;
            scores[g] = si;
            loss_group += w[i + g] * huber_loss(ri, tau, half_tau_squared);
            score_group += si;
        }
        loss += static_cast<double>(loss_group);
        score += static_cast<double>(score_group);
    };
    if (product != nullptr)
        dispatch(n, p, X, change, product, update);
    else
        dispatch<false>(n, p, X, change, product, update);
    TrialSums sums;
    sums.loss = loss;
    sums.score_sum = score;
    return sums;
}

template void narrow_step_pass<float>(std::int64_t, std::int64_t, const float*, const float*, float, const float*,
                                      const float*, float, float*, float*, float*);
template void narrow_step_pass<double>(std::int64_t, std::int64_t, const double*, const double*, double,
                                       const double*, const double*, double, double*, double*, double*);
template void narrow_residual_pass<float>(std::int64_t, std::int64_t, const float*, const float*, float,
                                          const float*, const float*, float, float*, float*, float*);
template void narrow_residual_pass<double>(std::int64_t, std::int64_t, const double*, const double*, double,
                                           const double*, const double*, double, double*, double*, double*);
template TrialSums narrow_trial_pass<float>(std::int64_t, std::int64_t, const float*, const float*, float,
                                            const float*, const float*, float, float*, float*, float*);
template TrialSums narrow_trial_pass<double>(std::int64_t, std::int64_t, const double*, const double*, double,
                                             const double*, const double*, double, double*, double*, double*);

}  // namespace rh::cpu::fast

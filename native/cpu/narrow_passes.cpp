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

// The pass itself, for rows of at most K vectors. Every row is loaded once
// into K registers: they give dz_i = x_i . v and, after update(i, dz_i)
// returned s_i, the accumulation acc += s_i x_i. A row's loads may run
// past its end into the next row (those lanes meet zeros in v, and their
// lanes of acc are dropped); the last rows, whose loads would leave X, go
// through a zero-padded copy.
template <class T, int K, class Update>
[[gnu::always_inline]] inline void one_read_pass(std::int64_t n, std::int64_t p, const T* X, const T* v, T* product,
                                                 Update& update) {
    using V = typename Vector32<T>::type;
    constexpr std::int64_t L = static_cast<std::int64_t>(sizeof(V) / sizeof(T));
    constexpr std::int64_t W = K * L;
    alignas(32) T padded[W] = {};
    std::copy(v, v + p, padded);
    V vv[K], acc[K];
#pragma GCC unroll 8
    for (int k = 0; k < K; ++k) {
        vv[k] = load(padded + k * L);
        acc[k] = V{};
    }
    // Inlined so that it is compiled with the caller's instruction set (a
    // separate function would be built for the baseline only).
    auto row = [&](const T* x, std::int64_t i) __attribute__((always_inline)) {
        V xv[K];
#pragma GCC unroll 8
        for (int k = 0; k < K; ++k) xv[k] = load(x + k * L);
        // Two partial sums halve the dependent FMA chain of the dot.
        V d = xv[0] * vv[0];
        V e = K > 1 ? xv[1] * vv[1] : V{};
#pragma GCC unroll 8
        for (int k = 2; k < K; k += 2) {
            d += xv[k] * vv[k];
            if (k + 1 < K) e += xv[k + 1] * vv[k + 1];
        }
        d += e;
        T dot = d[0];
#pragma GCC unroll 8
        for (std::int64_t l = 1; l < L; ++l) dot += d[l];
        const T s = update(i, dot);
#pragma GCC unroll 8
        for (int k = 0; k < K; ++k) acc[k] += s * xv[k];
    };
    // Rows whose W-wide loads stay inside the n x p array.
    const std::int64_t safe = n * p >= W ? std::min(n, (n * p - W) / p + 1) : 0;
    for (std::int64_t i = 0; i < safe; ++i) row(X + i * p, i);
    alignas(32) T tail[W];
    for (std::int64_t i = safe; i < n; ++i) {
        std::fill(tail, tail + W, T(0));
        std::copy(X + i * p, X + (i + 1) * p, tail);
        row(tail, i);
    }
    alignas(32) T out[W];
#pragma GCC unroll 8
    for (int k = 0; k < K; ++k) *reinterpret_cast<V*>(out + k * L) = acc[k];
    std::copy(out, out + p, product);
}

// Dispatches on the row's vector count (1..8).
template <class T, class Update>
[[gnu::always_inline]] inline void dispatch(std::int64_t n, std::int64_t p, const T* X, const T* v, T* product,
                                            Update& update) {
    constexpr std::int64_t L = 32 / static_cast<std::int64_t>(sizeof(T));
    switch ((p + L - 1) / L) {
        case 1: one_read_pass<T, 1>(n, p, X, v, product, update); break;
        case 2: one_read_pass<T, 2>(n, p, X, v, product, update); break;
        case 3: one_read_pass<T, 3>(n, p, X, v, product, update); break;
        case 4: one_read_pass<T, 4>(n, p, X, v, product, update); break;
        case 5: one_read_pass<T, 5>(n, p, X, v, product, update); break;
        case 6: one_read_pass<T, 6>(n, p, X, v, product, update); break;
        case 7: one_read_pass<T, 7>(n, p, X, v, product, update); break;
        default: one_read_pass<T, 8>(n, p, X, v, product, update); break;
    }
}

}  // namespace

template <class T>
RH_MULTIVERSION void narrow_step_pass(std::int64_t n, std::int64_t p, const T* X, const T* step, T b, const T* r,
                                      const T* w, T tau, T* dz, T* s, T* product) {
    auto update = [&](std::int64_t i, T dot) __attribute__((always_inline)) {
        const T dzi = dot + b;
        dz[i] = dzi;
        const T si = w[i] * clip(r[i] + dzi, tau);
        s[i] = si;
        return si;
    };
    dispatch(n, p, X, step, product, update);
}

template <class T>
RH_MULTIVERSION TrialSums narrow_trial_pass(std::int64_t n, std::int64_t p, const T* X, const T* change, T b,
                                            const T* r, const T* w, T tau, T* r_trial, T* s, T* product) {
    const T half_tau_squared = (T(0.5) * tau) * tau;
    double loss = 0.0, score = 0.0;
    auto update = [&](std::int64_t i, T dot) __attribute__((always_inline)) {
        const T ri = r[i] - (dot + b);
        r_trial[i] = ri;
        const T si = w[i] * clip(ri, tau);
        s[i] = si;
        loss += static_cast<double>(w[i] * huber_loss(ri, tau, half_tau_squared));
        score += static_cast<double>(si);
        return si;
    };
    dispatch(n, p, X, change, product, update);
    TrialSums sums;
    sums.loss = loss;
    sums.score_sum = score;
    return sums;
}

template void narrow_step_pass<float>(std::int64_t, std::int64_t, const float*, const float*, float, const float*,
                                      const float*, float, float*, float*, float*);
template void narrow_step_pass<double>(std::int64_t, std::int64_t, const double*, const double*, double,
                                       const double*, const double*, double, double*, double*, double*);
template TrialSums narrow_trial_pass<float>(std::int64_t, std::int64_t, const float*, const float*, float,
                                            const float*, const float*, float, float*, float*, float*);
template TrialSums narrow_trial_pass<double>(std::int64_t, std::int64_t, const double*, const double*, double,
                                             const double*, const double*, double, double*, double*, double*);

}  // namespace rh::cpu::fast

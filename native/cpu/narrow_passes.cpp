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

// Lane sums of one vector per row, for a group of rows as wide as a vector:
// returns S with S[g] = sum_l D[g][l]. Each level adds pairs of vectors
// after interleaving blocks of H lanes, so the group needs L - 1 vector adds
// and 2 (L - 1) shuffles instead of L - 1 scalar adds per row.
[[gnu::always_inline]] inline Vector32<double>::type fold_rows(const Vector32<double>::type* D) {
    using I = std::int64_t __attribute__((vector_size(32)));
    constexpr I lo1{0, 4, 2, 6}, hi1{1, 5, 3, 7}, lo2{0, 1, 4, 5}, hi2{2, 3, 6, 7};
    const auto a = __builtin_shuffle(D[0], D[1], lo1) + __builtin_shuffle(D[0], D[1], hi1);  // rows 0, 1
    const auto b = __builtin_shuffle(D[2], D[3], lo1) + __builtin_shuffle(D[2], D[3], hi1);  // rows 2, 3
    return __builtin_shuffle(a, b, lo2) + __builtin_shuffle(a, b, hi2);
}
[[gnu::always_inline]] inline Vector32<float>::type fold_rows(const Vector32<float>::type* D) {
    using I = std::int32_t __attribute__((vector_size(32)));
    constexpr I lo1{0, 8, 2, 10, 4, 12, 6, 14}, hi1{1, 9, 3, 11, 5, 13, 7, 15};
    constexpr I lo2{0, 1, 8, 9, 4, 5, 12, 13}, hi2{2, 3, 10, 11, 6, 7, 14, 15};
    constexpr I lo4{0, 1, 2, 3, 8, 9, 10, 11}, hi4{4, 5, 6, 7, 12, 13, 14, 15};
    Vector32<float>::type pairs[4], quads[2];
#pragma GCC unroll 4
    for (int j = 0; j < 4; ++j)
        pairs[j] = __builtin_shuffle(D[2 * j], D[2 * j + 1], lo1) + __builtin_shuffle(D[2 * j], D[2 * j + 1], hi1);
#pragma GCC unroll 2
    for (int j = 0; j < 2; ++j)
        quads[j] = __builtin_shuffle(pairs[2 * j], pairs[2 * j + 1], lo2) +
                   __builtin_shuffle(pairs[2 * j], pairs[2 * j + 1], hi2);
    return __builtin_shuffle(quads[0], quads[1], lo4) + __builtin_shuffle(quads[0], quads[1], hi4);
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
    // x . v as one vector of partial sums (two chains halve the FMA latency).
    auto products = [&](const T* x) __attribute__((always_inline)) {
        V d = load(x) * vv[0];
        V e = K > 1 ? load(x + L) * vv[1] : V{};
#pragma GCC unroll 8
        for (int k = 2; k < K; k += 2) {
            d += load(x + k * L) * vv[k];
            if (k + 1 < K) e += load(x + (k + 1) * L) * vv[k + 1];
        }
        return d + e;
    };
    auto dot = [&](const T* x) __attribute__((always_inline)) {
        const V d = products(x);
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
        V partial[G];
#pragma GCC unroll 8
        for (int g = 0; g < G; ++g) partial[g] = products(rows + g * p);
        *reinterpret_cast<V*>(dots) = fold_rows(partial);
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
    // Per-lane sums in double, added up once at the end: a per-group
    // horizontal sum would be a serial chain through every group.
    constexpr int G = 32 / static_cast<int>(sizeof(T));
    alignas(64) double loss_lanes[G] = {}, score_lanes[G] = {};
    auto update = [&](std::int64_t i, int m, const T* dots, T* scores) __attribute__((always_inline)) {
#pragma omp simd
        for (int g = 0; g < m; ++g) {
            const T ri = r[i + g] - (dots[g] + b);
            r_trial[i + g] = ri;
            const T si = w[i + g] * clip(ri, tau);
            s[i + g] = si;
            scores[g] = si;
            loss_lanes[g] += static_cast<double>(w[i + g] * huber_loss(ri, tau, half_tau_squared));
            score_lanes[g] += static_cast<double>(si);
        }
    };
    if (product != nullptr)
        dispatch(n, p, X, change, product, update);
    else
        dispatch<false>(n, p, X, change, product, update);
    TrialSums sums;
    sums.loss = 0.0;
    sums.score_sum = 0.0;
    for (int g = 0; g < G; ++g) {
        sums.loss += loss_lanes[g];
        sums.score_sum += score_lanes[g];
    }
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

#include "cpu/kernels/fast_kernels.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>

#include "cpu/platform/isa_dispatch.hpp"
#include "core/huber.hpp"

namespace rh::cpu::fast {

namespace {

// Rows per block of the reductions: SIMD partial sums inside a block, block
// sums added in order (error ~ (block / lanes + n / block) eps).
constexpr std::int64_t kBlock = 512;

template <class T>
inline void scaled_row(std::int64_t p, bool intercept, const T* x, T scale, T* out) noexcept {
#pragma omp simd
    for (std::int64_t j = 0; j < p; ++j) out[j] = scale * x[j];
    if (intercept) out[p] = scale;
}

}  // namespace

template <class T>
RH_MULTIVERSION ScoreSums score_pass(std::int64_t n, const T* r, const RowScoring<T>& scoring) {
    const T* w = scoring.w;
    const T tau = scoring.tau, h = scoring.h;
    const T* c_gram = scoring.c_gram;
    T* s = scoring.s;
    T* c = scoring.c;
    const T inverse_two_h = T(1) / (T(2) * h);
    ScoreSums sums;
    T total = T(0);
    for (std::int64_t begin = 0; begin < n; begin += kBlock) {
        const std::int64_t end = std::min(n, begin + kBlock);
        T block = T(0);
        if (c != nullptr) {
            // Counts as T (exact below 2^24 per block): keeps the loop in one vector width.
            T changed = T(0), weighted = T(0);
#pragma omp simd reduction(+ : block, changed, weighted)
            for (std::int64_t i = begin; i < end; ++i) {
                const T ri = r[i], wi = w[i];
                const T si = wi * core::huber_score(ri, tau);
                const T ci = wi * core::smoothed_curvature_fast(ri, tau, h, inverse_two_h);
                s[i] = si;
                c[i] = ci;
                block += si;
                changed += ci != c_gram[i] ? T(1) : T(0);
                weighted += ci > T(0) ? T(1) : T(0);
            }
            sums.changed += static_cast<std::int64_t>(changed);
            sums.weighted_rows += static_cast<std::int64_t>(weighted);
        } else {
#pragma omp simd reduction(+ : block)
            for (std::int64_t i = begin; i < end; ++i) {
                const T si = w[i] * core::huber_score(r[i], tau);
                s[i] = si;
                block += si;
            }
        }
        total += block;
    }
    sums.score_sum = static_cast<double>(total);
    return sums;
}

template <class T>
RH_MULTIVERSION TrialSums trial_pass(const TrialRows<T>& rows) {
    const std::int64_t n = rows.n;
    const T* r = rows.r;
    const T* dz = rows.dz;
    const T b = rows.b;
    const T* w = rows.w;
    const T tau = rows.tau;
    T* r_trial = rows.r_trial;
    T* s = rows.s;
    const T half_tau_squared = (T(0.5) * tau) * tau;
    TrialSums sums;
    T loss_total = T(0), score_total = T(0);
    for (std::int64_t begin = 0; begin < n; begin += kBlock) {
        const std::int64_t end = std::min(n, begin + kBlock);
        T loss_block = T(0), score_block = T(0);
#pragma omp simd reduction(+ : loss_block, score_block)
        for (std::int64_t i = begin; i < end; ++i) {
            const T ri = r[i] - (dz[i] + b);
            const T si = w[i] * core::huber_score(ri, tau);
            r_trial[i] = ri;
            s[i] = si;
            loss_block += w[i] * core::huber_loss_fast(ri, tau, half_tau_squared);
            score_block += si;
        }
        loss_total += loss_block;
        score_total += score_block;
    }
    sums.loss = static_cast<double>(loss_total);
    sums.score_sum = static_cast<double>(score_total);
    return sums;
}

template <class T>
RH_MULTIVERSION ScoreSums full_step_rows(const FullStepRows<T>& rows) {
    const std::int64_t n = rows.n;
    const T* r = rows.r;
    T* dz = rows.dz;
    const T b = rows.b;
    T* r_next = rows.r_next;
#pragma omp simd
    for (std::int64_t i = 0; i < n; ++i) {
        const T dzi = dz[i] + b;
        dz[i] = dzi;
        r_next[i] = r[i] + dzi;
    }
    return score_pass(n, r_next, rows.scoring);  // the block is still in cache
}

template <class T>
RH_MULTIVERSION void residual_from_product(std::int64_t n, const T* y, T b, T* out) {
#pragma omp simd
    for (std::int64_t i = 0; i < n; ++i) out[i] = y[i] - (out[i] + b);
}

template <class T>
RH_MULTIVERSION void add_scaled(std::int64_t n, T t, const T* x, T* y) {
#pragma omp simd
    for (std::int64_t i = 0; i < n; ++i) y[i] = y[i] + t * x[i];
}

// Rows are selected 64 at a time through a bit mask built without branches
// and walked with count-trailing-zeros: a branch per row mispredicts on
// every change of the pattern.
template <class T, class Select>
[[gnu::always_inline]] inline std::uint64_t row_mask(std::int64_t begin, std::int64_t count, Select& select) {
    std::uint64_t mask = 0;
    for (std::int64_t k = 0; k < count; ++k) mask |= static_cast<std::uint64_t>(select(begin + k)) << k;
    return mask;
}

template <class T>
RH_MULTIVERSION std::int64_t gather_weighted_rows(std::int64_t n, std::int64_t p, bool intercept, const T* X,
                                                  const T* c, T* out) {
    const std::int64_t d = p + (intercept ? 1 : 0);
    std::int64_t m = 0;
    auto weighted = [&](std::int64_t i) __attribute__((always_inline)) { return c[i] > T(0); };
    for (std::int64_t begin = 0; begin < n; begin += 64) {
        std::uint64_t mask = row_mask<T>(begin, std::min<std::int64_t>(64, n - begin), weighted);
        while (mask != 0) {
            const std::int64_t i = begin + __builtin_ctzll(mask);
            mask &= mask - 1;
            scaled_row(p, intercept, X + i * p, std::sqrt(c[i]), out + m * d);
            ++m;
        }
    }
    return m;
}

template <class T>
RH_MULTIVERSION void gather_changed_rows(std::int64_t n, std::int64_t p, bool intercept, const T* X,
                                         const T* c_new, const T* c_old, T* out, std::int64_t& rising,
                                         std::int64_t& falling) {
    const std::int64_t d = p + (intercept ? 1 : 0);
    std::int64_t up = 0, down = 0;
    auto rises = [&](std::int64_t i) __attribute__((always_inline)) { return c_new[i] - c_old[i] > T(0); };
    auto falls = [&](std::int64_t i) __attribute__((always_inline)) { return c_new[i] - c_old[i] < T(0); };
    for (std::int64_t begin = 0; begin < n; begin += 64) {
        const std::int64_t count = std::min<std::int64_t>(64, n - begin);
        std::uint64_t up_mask = row_mask<T>(begin, count, rises);
        std::uint64_t down_mask = row_mask<T>(begin, count, falls);
        while (up_mask != 0) {
            const std::int64_t i = begin + __builtin_ctzll(up_mask);
            up_mask &= up_mask - 1;
            scaled_row(p, intercept, X + i * p, std::sqrt(c_new[i] - c_old[i]), out + up * d);
            ++up;
        }
        while (down_mask != 0) {
            const std::int64_t i = begin + __builtin_ctzll(down_mask);
            down_mask &= down_mask - 1;
            ++down;
            scaled_row(p, intercept, X + i * p, std::sqrt(c_old[i] - c_new[i]), out + (n - down) * d);
        }
    }
    rising = up;
    falling = down;
}

#define RH_INSTANTIATE(T)                                                                                        \
    template ScoreSums score_pass<T>(std::int64_t, const T*, const RowScoring<T>&);                             \
    template TrialSums trial_pass<T>(const TrialRows<T>&);                                                      \
    template ScoreSums full_step_rows<T>(const FullStepRows<T>&);                                               \
    template void residual_from_product<T>(std::int64_t, const T*, T, T*);                                      \
    template void add_scaled<T>(std::int64_t, T, const T*, T*);                                                 \
    template std::int64_t gather_weighted_rows<T>(std::int64_t, std::int64_t, bool, const T*, const T*, T*);   \
    template void gather_changed_rows<T>(std::int64_t, std::int64_t, bool, const T*, const T*, const T*, T*,    \
                                         std::int64_t&, std::int64_t&);
RH_FOR_EACH_FLOAT(RH_INSTANTIATE)
#undef RH_INSTANTIATE

}  // namespace rh::cpu::fast

// One-read row passes for narrow designs (p <= narrow_pass_max_features<T>):
// each row of X is loaded into vector registers once and serves both
// products of a fused pass (fast_path.hpp, fused_step_product / fused_trial):
//
//     dz_i = x_i . v,   then a per-row update that yields s_i,   acc += s_i x_i.
//
// For short rows the BLAS GEMV kernels are dominated by per-call and per-row
// overheads (a 4,096 x 16 float64 GEMV takes ~15 us against ~3 us of
// memory traffic from L2), and the blocked BLAS version of the fused passes
// reads every row twice. Defined and explicitly instantiated (float,
// double) in narrow_passes.cpp, multiversioned.
#pragma once

#include <cstdint>

#include "cpu/fast_kernels.hpp"

namespace rh::cpu::fast {

// Widest p the narrow passes take: 8 vectors of 32 bytes per row.
template <class T>
inline constexpr std::int64_t narrow_pass_max_features = 8 * 32 / static_cast<std::int64_t>(sizeof(T));

// Newton's full step over rows [0, n): dz_i = x_i . step[:p] + b and
// s_i = w_i score(r_i + dz_i); product[:p] = sum_i s_i x_i.
template <class T>
void narrow_step_pass(std::int64_t n, std::int64_t p, const T* X, const T* step, T b, const T* r, const T* w, T tau,
                      T* dz, T* s, T* product);

// The residual at the start of a solve over rows [0, n): r_i = y_i -
// (x_i . theta[:p] + b), s_i = w_i score(r_i); product[:p] = sum_i s_i x_i
// (the first gradient's X' s).
template <class T>
void narrow_residual_pass(std::int64_t n, std::int64_t p, const T* X, const T* theta, T b, const T* y, const T* w,
                          T tau, T* r, T* s, T* product);

// A LAMM trial over rows [0, n): dz_i = x_i . change[:p],
// r_trial_i = r_i - (dz_i + b), s_i = w_i score(r_trial_i);
// product[:p] = sum_i s_i x_i (skipped when product is null); returns the
// loss and score sums.
template <class T>
TrialSums narrow_trial_pass(std::int64_t n, std::int64_t p, const T* X, const T* change, T b, const T* r,
                            const T* w, T tau, T* r_trial, T* s, T* product);

}  // namespace rh::cpu::fast

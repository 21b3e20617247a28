// The O(n) and gather kernels of the fast path (cpu/fast/). Defined and
// explicitly instantiated (float, double) in fast_kernels.cpp only, each
// compiled for several instruction-set levels (cpu/platform/isa_dispatch.hpp).
#pragma once

#include <cstdint>

#include "cpu/kernels/kernel_args.hpp"

namespace rh::cpu::fast {

// Scores rows [0, n) at residual r (kernel_args.hpp, RowScoring).
template <class T>
ScoreSums score_pass(std::int64_t n, const T* r, const RowScoring<T>& scoring);

// sum_i w_i loss(r_i + t dz_i) (dz == nullptr: sum_i w_i loss(r_i)), in T,
// blockwise: per block of kLossBlock rows, kLossLanes lane sums (lane l
// takes the block's rows l, l + kLossLanes, ...) added in lane order, then
// the block sums in order. Defined in narrow_passes.cpp, compiled per
// instruction-set level with the narrow step pass, which sums its t = 1
// loss exactly this way (same level, same expression: bit for bit).
inline constexpr std::int64_t kLossBlock = 512;
inline constexpr int kLossLanes = 16;

template <class T>
double loss_sum(std::int64_t n, const T* r, const T* dz, T t, const T* w, T tau);

// Steps a line-search batch evaluates in one pass.
inline constexpr int kStepBatch = 4;

// loss_sum at `count` (1..kStepBatch) steps t[k] in one read of r, dz and
// w: out[k] is bit for bit loss_sum(n, r, dz, t[k], w, tau).
template <class T>
void loss_sums(std::int64_t n, const T* r, const T* dz, const T* t, int count, const T* w, T tau, double* out);

// One majorization trial over a block of rows (kernel_args.hpp, TrialRows);
// both sums in T, blockwise like loss_sum.
template <class T>
TrialSums trial_pass(const TrialRows<T>& rows);

// Newton's full step over a block (kernel_args.hpp, FullStepRows): when the
// line search takes t = 1, the next iteration starts without another pass
// over the rows. (The wider rows' path: its loss at t = 1 still comes from
// loss_sum, which every trial's loss must match bit for bit or noise-level
// decisions flip near convergence; the narrow step pass sums it the same
// way itself.)
template <class T>
ScoreSums full_step_rows(const FullStepRows<T>& rows);

// out_i = y_i - (out_i + b): turns out = X theta into the residual.
template <class T>
void residual_from_product(std::int64_t n, const T* y, T b, T* out);

// y_i = y_i + t x_i.
template <class T>
void add_scaled(std::int64_t n, T t, const T* x, T* y);

// Rows i with c_i > 0 as sqrt(c_i) * [x_i, 1] (the 1 only with an
// intercept), packed into out (m x d); returns m.
template <class T>
std::int64_t gather_weighted_rows(std::int64_t n, std::int64_t p, bool intercept, const T* X, const T* c, T* out);

// Rows whose weight changed, as sqrt(|c_new - c_old|) * [x_i, 1]: rising
// ones packed from the front of out (rows 0..rising-1), falling ones from
// its back (rows n-falling..n-1). out has room for n rows of d.
template <class T>
void gather_changed_rows(std::int64_t n, std::int64_t p, bool intercept, const T* X, const T* c_new,
                         const T* c_old, T* out, std::int64_t& rising, std::int64_t& falling);

}  // namespace rh::cpu::fast

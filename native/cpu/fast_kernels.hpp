// The O(n) and gather kernels of the fast path (fast_path.hpp). Defined and
// explicitly instantiated (float, double) in fast_kernels.cpp only, each
// compiled for several instruction-set levels (core/multiversion.hpp).
#pragma once

#include <cstdint>

namespace rh::cpu::fast {

struct ScoreSums {
    double score_sum = 0.0;          // sum_i w_i score(r_i): the intercept's Z' s
    std::int64_t changed = 0;        // rows with c_i != the Gram's weight
    std::int64_t weighted_rows = 0;  // rows with c_i > 0

    ScoreSums& operator+=(const ScoreSums& other) {
        score_sum += other.score_sum;
        changed += other.changed;
        weighted_rows += other.weighted_rows;
        return *this;
    }
};

// s = w * score(r); when c != nullptr also c = w * kappa(r) (ramps as
// multiplications by 1/(2h)) and the counts against c_gram.
template <class T>
ScoreSums score_pass(std::int64_t n, const T* r, const T* w, T tau, T h, T* s, T* c, const T* c_gram);

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

struct TrialSums {
    double loss = 0.0;       // sum_i w_i loss(r_trial_i)
    double score_sum = 0.0;  // sum_i w_i score(r_trial_i)
};

// One majorization trial over a block of rows, given dz = X change:
// r_trial = r - (dz + b), s = w * score(r_trial), and both sums (in T,
// blockwise like loss_sum).
template <class T>
TrialSums trial_pass(std::int64_t n, const T* r, const T* dz, T b, const T* w, T tau, T* r_trial, T* s);

// Newton's full step over a block, given dz = X step[:p]: dz_i += b
// (completing Z step), r_next_i = r_i + dz_i, and at r_next what
// score_pass(.., c, c_gram) computes there (s = w score, c = w kappa and
// their sums): when the line search takes t = 1, the next iteration starts
// without another pass over the rows. (The wider rows' path: its loss at
// t = 1 still comes from loss_sum, which every trial's loss must match bit
// for bit or noise-level decisions flip near convergence; the narrow step
// pass sums it the same way itself.)
template <class T>
ScoreSums full_step_rows(std::int64_t n, const T* r, T* dz, T b, const T* w, T tau, T h, const T* c_gram, T* r_next,
                        T* s, T* c);

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

// The engine's row kernels (one thread a row or an element, fixed grids,
// block partial sums: launch.cuh): the batch check, the residual, the Huber
// terms (score, curvature, the weighted rows of the Gram), the line
// search's losses at every halving in one pass, the LAMM trials' losses,
// and the intercept of a prediction. The Huber pieces are core's
// (core/huber.hpp, fast form). Reductions run in double in both dtypes.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

namespace rh::cuda {

// Halvings the line search evaluates in one pass: t = 1, 1/2, ..., 2^-26,
// every t >= core::kSmallestStep (2^-26 = 1.49e-8 >= 1e-8 > 2^-27).
inline constexpr int kLineSearchSteps = 27;
// Doublings of the majorizer's step evaluated in one pass after t = 1 was
// accepted: u = 2, 4, ..., 2^20 = core::kLargestMajorizerStep (amendment 0002).
inline constexpr int kDoublingSteps = 20;
// LAMM trials evaluated per pass (phi, 2 phi, 4 phi, 8 phi).
inline constexpr int kLammTrialsPerPass = 4;

// What the batch check sums (a block partial each, then the totals).
enum BatchCheckSum : int {
    kNonFiniteX = 0,
    kNonFiniteY,
    kNonFiniteW,
    kNegativeW,
    kPositiveW,
    kWeightSum,
    kBatchCheckSums
};

// What the host's driver decided that a pass needs, in device memory
// (uploaded before the pass): the residual's move, Newton's accepted step
// (r += t dz; t = 0: no move) or LAMM's accepted trial (r = column `trial`
// of the trials' residuals; -1: none), and the phi of the first LAMM trial
// the pass evaluates ahead.
struct PassInputs {
    double t = 0.0;
    int trial = -1;
    double phi = 1.0;
};

// How the residual moves before it is scored (the move read on the device).
template <class T>
struct ResidualAdvance {
    const T* dz = nullptr;
    const double* t = nullptr;
    const T* trial_residuals = nullptr;  // n x kLammTrialsPerPass, column-major
    const int* trial = nullptr;
};

template <class T>
void launch_check_batch(cudaStream_t stream, std::int64_t n, std::int64_t p, const T* X, const T* y, const T* w,
                        double* partials);

// r = y - (r + b): r held X theta[:p] (a GEMV), b = theta[p] (device; null:
// no intercept). Partial sums: w loss(r).
template <class T>
void launch_start_residual(cudaStream_t stream, std::int64_t n, const T* y, const T* w, const T* b, T tau, T* r,
                           double* partials);

// The residual advanced, then s = w score(r) (and c = w kappa(r) when c is
// not null). Partial sums: s.
template <class T>
void launch_score_rows(cudaStream_t stream, std::int64_t n, const ResidualAdvance<T>& advance, const T* w, T tau,
                       T h, T* r, T* s, T* c, double* partials);

// out = w score(r)^2, the meat's row weights (amendment 0003).
template <class T>
void launch_meat_weights(cudaStream_t stream, std::int64_t n, const T* r, const T* w, T tau, T* out);

// W (n x d, row-major) = sqrt(c_i) [x_i, 1] (the 1 only with an intercept).
template <class T>
void launch_weighted_rows(cudaStream_t stream, std::int64_t n, std::int64_t p, bool intercept, const T* X,
                          const T* c, T* W);

// dz += b (completing Z step; b = step[p] on the device or null), then the
// losses sum_i w_i loss(r_i + t_k dz_i) at the kLineSearchSteps halvings.
template <class T>
void launch_line_search_losses(cudaStream_t stream, std::int64_t n, const T* r, T* dz, const T* b, const T* w,
                               T tau, double* partials);

// The losses sum_i w_i loss(r_i + u_k dz_i) at the kDoublingSteps doublings
// u_k = 2^(k+1) (dz: the full Z step, as the halving pass left it).
template <class T>
void launch_doubling_losses(cudaStream_t stream, std::int64_t n, const T* r, const T* dz, const T* w, T tau,
                            double* partials);

// The LAMM trials' residuals r_k = r - (DZ_k + b_k) (DZ = X Delta[:p],
// n x trials column-major; b = the trials' intercept changes on the device
// or null) and their losses.
template <class T>
void launch_lamm_trials(cudaStream_t stream, std::int64_t n, int trials, const T* r, const T* DZ, const T* b,
                        const T* w, T tau, T* trial_residuals, double* partials);

// out += b (a prediction's intercept, b on the device).
template <class T>
void launch_add_intercept(cudaStream_t stream, std::int64_t n, const T* b, T* out);

// out[k] = the k-th of K (1 to 32) sums over `blocks` blocks' partials, by
// one warp each in a fixed order (the same bits whatever the scheduling).
void launch_finish_sums(cudaStream_t stream, const double* partials, int blocks, int K, double* out);

template <class T>
void launch_fill(cudaStream_t stream, std::int64_t n, T value, T* out);

}  // namespace rh::cuda

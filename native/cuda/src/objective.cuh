// The d-sized work of an iteration, on the device, one block per kernel:
// the gradient and the Newton matrix of the surrogate objective (ALGORITHM.md),
// the information update, and the pipeline's decisions (solver_rules.hpp's
// tests and updates: line search over every halving at once, LAMM's
// majorization test and phi) written into an IterationFlags record the host
// reads once per iteration. The solve ladder's kernels are in
// ladder_kernels.cuh.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

namespace rh::cuda {

// What an iteration decided, in device memory (and a pinned host copy).
struct IterationFlags {
    double objective = 0.0;     // F at the current point (LAMM's accelerated phase: maybe an extrapolated one)
    double base_objective = 0.0;   // F at the accepted iterate theta
    double start_objective = 0.0;  // F at the batch's starting point
    double accepted_phi = 0.0;     // LAMM: phi of the accepted trial (before it is halved)
    double t_advance = 0.0;     // Newton: t of the accepted step (0: none), applied by the next scoring pass
    double phi = 1.0;           // LAMM's phi for the next trial
    double change_norm = 0.0;
    double theta_norm = 0.0;
    double rcond = 0.0;         // of the last factored Newton matrix
    double norm1 = 0.0;         // ||H||_1
    int trial_advance = -1;     // LAMM: the accepted trial's column (-1: none), applied by the next scoring pass
    int accepted = 0;
    int converged = 0;
    int step_ok = 0;            // the last solve gave a usable step
    int symmetric = 0;          // the Newton matrix is exactly symmetric
    int need_fallback = 0;      // the Cholesky step was refused: the host runs the next rung
    int info = 0;               // the last factorization's info
    int restarted = 0;          // LAMM: the accepted trial would have raised the penalized objective
};

// The batch's surrogate objective, as the kernels see it.
template <class T>
struct SurrogateTerms {
    std::int64_t d = 0, p = 0;
    bool intercept = true;
    const T* theta_prev = nullptr;
    const T* information = nullptr;  // J_prev, d x d row-major
    const T* history = nullptr;      // sign(theta_prev) * mask
    bool uses_history = false;
    double history_coefficient = 0.0;
    double weight_sum = 1.0;         // N
    T ridge = T(0);
};

// The LAMM trials of one pass: candidates (d x trials, column-major), their
// changes' feature part (p x trials, the GEMM's right-hand side) and
// intercept part (trials), g' change, ||change||^2, ||candidate||^2 and the
// memory term of f at each candidate.
template <class T>
struct LammTrials {
    T* candidates = nullptr;
    T* feature_changes = nullptr;
    T* intercept_changes = nullptr;
    double* gradient_dot_change = nullptr;
    double* change_norm2 = nullptr;
    double* candidate_norm2 = nullptr;
    double* memory = nullptr;
};

// F at the starting point (the memory terms vanish there): loss / N.
void launch_start_objective(cudaStream_t stream, const double* partials, int blocks, double weight_sum,
                            IterationFlags* flags);

// g = grad f(theta) (d) and H = (G + J)/N + ridge I (column-major, full;
// G: SYRK's upper triangle, column-major); flags: symmetric, norm1.
// gx: X' s (p), s_partials: the scoring pass's partial sums of s.
template <class T>
void launch_newton_system(cudaStream_t stream, const SurrogateTerms<T>& terms, const T* theta, const T* gx,
                          const double* s_partials, int blocks, const T* G, T* g, T* H, IterationFlags* flags);

// Systems up to this size take the Cholesky rung in one block (factor,
// inverse, rcond and step in shared memory) instead of cuSOLVER's potrf and
// potrs, whose several launches dominate an iteration at such sizes.
inline constexpr std::int64_t kSmallSystem = 48;  // two d x d factors in 48 KB of shared memory

// The line search over every halving at once (kLineSearchSteps losses from
// the pass): the first t whose candidate rounds to theta (convergence) or
// does not raise f is taken; theta moves, F, the convergence test and
// t_advance into flags. Does nothing when flags.step_ok is 0 (sets
// need_fallback).
template <class T>
void launch_line_search_decide(cudaStream_t stream, const SurrogateTerms<T>& terms, T* theta, const T* step,
                               const double* partials, int blocks, double tol, IterationFlags* flags);

// M = (G_w + J)/N + ridge I into H (G_w: the Gram with the row weights w,
// the majorizer of amendment 0002), as launch_newton_system forms H.
template <class T>
void launch_majorizer_matrix(cudaStream_t stream, const SurrogateTerms<T>& terms, const T* G, T* H,
                             IterationFlags* flags);

// After the majorizer's t = 1 was accepted from `start`: u = 2, 4, ... while
// f strictly decreases (the kDoublingSteps losses of launch_doubling_losses);
// the last decreasing u moves theta from `start` (flags as the line search
// sets them), none leaves theta at t = 1.
template <class T>
void launch_doubling_decide(cudaStream_t stream, const SurrogateTerms<T>& terms, const T* start, const T* step,
                            const double* partials, int blocks, double tol, T* theta, IterationFlags* flags);

template <class T>
void launch_gradient(cudaStream_t stream, const SurrogateTerms<T>& terms, const T* theta, const T* gx,
                     const double* s_partials, int blocks, T* g);

// The LAMM trials at phi, 2 phi, ... (flags.phi) for `trials` of them.
template <class T>
void launch_lamm_proposals(cudaStream_t stream, const SurrogateTerms<T>& terms, const T* theta, const T* g,
                           const T* mask, double lambda_value, int trials, const IterationFlags* flags,
                           const LammTrials<T>& out);

// How LAMM's trials of a pass are judged (core::lamm): the v1 iteration
// (slack kMajorizationSlack), or the accelerated phase (slack at the
// rounding level of F) from an extrapolated point, where an accepted trial
// that would raise the penalized objective above theta's restarts the
// momentum instead (`restart_check`).
struct LammJudgement {
    bool accelerated = false;
    bool restart_check = false;
    double lambda_value = 0.0;
};

// The first trial that f does not put above its majorizer is taken (theta,
// F, phi, convergence, trial_advance); none: phi doubles once per trial.
// With restart_check, a trial taken that raises f + lambda ||.||_1 (mask)
// above theta's sets flags.restarted and leaves theta.
template <class T>
void launch_lamm_decide(cudaStream_t stream, const SurrogateTerms<T>& terms, int trials, const double* partials,
                        int blocks, double tol, const LammTrials<T>& candidates, const T* mask,
                        const LammJudgement& judgement, T* theta, IterationFlags* flags);

// point = theta + beta (theta - previous), in T (core::lamm's extrapolation).
template <class T>
void launch_extrapolate(cudaStream_t stream, std::int64_t d, const T* theta, const T* previous, double beta, T* point);

// F at a point the solver jumps to (the residual there is in the start pass's
// partial sums): flags.objective (and base_objective when `is_theta`); the
// pending residual advances are cancelled (the residual was recomputed).
template <class T>
void launch_point_objective(cudaStream_t stream, const SurrogateTerms<T>& terms, const T* point,
                            const double* partials, int blocks, bool is_theta, IterationFlags* flags);

// J_next = J + G (G: SYRK's upper triangle, column-major; J row-major).
template <class T>
void launch_information_update(cudaStream_t stream, std::int64_t d, const T* J, const T* G, T* J_next);

}  // namespace rh::cuda

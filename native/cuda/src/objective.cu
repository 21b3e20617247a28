#include "objective.cuh"

#include "core/memory_along_step.hpp"
#include "core/soft_threshold.hpp"
#include "core/solver_rules.hpp"
#include "core/surrogate_terms.hpp"
#include "engine_internal.cuh"
#include "huber_kernels.cuh"
#include "launch.cuh"
#include "objective_device.cuh"

namespace rh::cuda {

namespace {

__global__ void start_objective_kernel(const double* partials, int blocks, double weight_sum, IterationFlags* flags) {
    if (threadIdx.x != 0) return;
    IterationFlags fresh;
    fresh.objective = sum_partials(partials, blocks, 1, 0) / weight_sum;
    fresh.base_objective = fresh.objective;
    fresh.start_objective = fresh.objective;
    fresh.phi = core::kInitialPhi;
    *flags = fresh;
}

template <class T>
__global__ void newton_system_kernel(SurrogateTerms<T> terms, const T* theta, const T* gx, const double* s_partials,
                                     int blocks, const T* G, T* g, T* H, IterationFlags* flags) {
    gradient_into(terms, theta, gx, s_partials, blocks, g);
    assemble_system_matrix(terms, G, H, flags);
}

template <class T>
__global__ void majorizer_matrix_kernel(SurrogateTerms<T> terms, const T* G, T* H, IterationFlags* flags) {
    assemble_system_matrix(terms, G, H, flags);
}

// The memory and history part of f along theta - t step
// (core::MemoryAlongStep), its sums by block reductions. Every thread of
// the block calls it; every thread gets the sums.
template <class T>
__device__ core::MemoryAlongStep step_memory(const SurrogateTerms<T>& terms, const T* theta, const T* step) {
    auto D0 = [&](std::int64_t j) { return static_cast<double>(theta[j] - terms.theta_prev[j]); };
    auto S = [&](std::int64_t j) { return static_cast<double>(step[j]); };
    core::MemoryAlongStep m;
    for (std::int64_t i = threadIdx.x; i < terms.d; i += blockDim.x) {
        const double jd0 = information_row(terms, i, D0), jstep = information_row(terms, i, S);
        m.a += D0(i) * jd0;
        m.b1 += S(i) * jd0;
        m.b2 += D0(i) * jstep;
        m.c += S(i) * jstep;
        if (terms.uses_history) {
            m.history0 += D0(i) * static_cast<double>(terms.history[i]);
            m.history1 += S(i) * static_cast<double>(terms.history[i]);
        }
    }
    m.a = block_sum(m.a);
    m.b1 = block_sum(m.b1);
    m.b2 = block_sum(m.b2);
    m.c = block_sum(m.c);
    m.history0 = block_sum(m.history0);
    m.history1 = block_sum(m.history1);
    m.inverse_n = 1.0 / terms.weight_sum;
    m.history_coefficient = terms.history_coefficient;
    m.uses_history = terms.uses_history;
    return m;
}

// theta = from - t step (in T, as every engine rounds it; `from` may be
// theta itself), then F there (the accepted trial's data term plus the memory
// part at the rounded point, as the next iteration's trials see it), the
// change, the convergence test and t_advance into flags.
template <class T>
__device__ void move_along(const SurrogateTerms<T>& terms, const T* from, const T* step, double t, double data_value,
                           double tol, T* theta, IterationFlags* flags) {
    const T scaled = static_cast<T>(t);
    double change = 0.0, norm = 0.0;
    for (std::int64_t j = threadIdx.x; j < terms.d; j += blockDim.x) {
        const T start = from[j];
        const T moved = start - scaled * step[j];
        const double delta = static_cast<double>(moved - start);
        change += delta * delta;
        norm += static_cast<double>(moved) * static_cast<double>(moved);
        theta[j] = moved;
    }
    change = sqrt(block_sum(change));
    norm = sqrt(block_sum(norm));
    const double value = data_value + memory_value(terms, theta);
    if (threadIdx.x == 0) {
        flags->objective = value;
        flags->base_objective = value;
        flags->accepted = 1;
        flags->t_advance = t;
        flags->change_norm = change;
        flags->theta_norm = norm;
        flags->converged = core::step_converged(change, norm, tol);
    }
}

template <class T>
__global__ void line_search_decide_kernel(SurrogateTerms<T> terms, T* theta, const T* step, const double* partials,
                                          int blocks, double tol, IterationFlags* flags) {
    if (flags->step_ok == 0) {
        if (threadIdx.x == 0) {
            flags->need_fallback = 1;
            flags->accepted = 0;
            flags->t_advance = 0.0;
        }
        return;
    }
    const std::int64_t d = terms.d;
    __shared__ double losses[kLineSearchSteps];
    for (int k = threadIdx.x; k < kLineSearchSteps; k += blockDim.x)
        losses[k] = sum_partials(partials, blocks, kLineSearchSteps, k);
    const core::MemoryAlongStep m = step_memory(terms, theta, step);
    __shared__ int chosen;         // the accepted halving, or -1
    __shared__ int rounds;         // its candidate rounds to theta
    __shared__ double data_value;  // the accepted trial's data term
    if (threadIdx.x == 0) {
        chosen = -1;
        rounds = 0;
        const double value = flags->objective;
        double t = 1.0;
        for (int k = 0; k < kLineSearchSteps && t >= core::kSmallestStep; ++k, t /= 2.0) {
            const T scaled = static_cast<T>(t);
            bool same = true;
            for (std::int64_t j = 0; j < d && same; ++j) same = theta[j] - scaled * step[j] == theta[j];
            if (same) {
                chosen = k;
                rounds = 1;
                break;
            }
            const double data = losses[k] * (1.0 / terms.weight_sum);
            const double trial = data + m.at(t);
            if (isfinite(trial) && core::plain_decrease(trial, value)) {
                chosen = k;
                data_value = data;
                break;
            }
        }
    }
    __syncthreads();
    if (chosen < 0 || rounds) {
        if (threadIdx.x == 0) {
            flags->accepted = rounds;
            flags->converged = rounds;
            flags->t_advance = 0.0;
            flags->change_norm = 0.0;
        }
        return;
    }
    move_along(terms, theta, step, ldexp(1.0, -chosen), data_value, tol, theta, flags);
}

// After the majorizer's t = 1 was accepted (theta = start - step): t doubles
// while f strictly decreases (core::damped_newton's majorizer_search); the
// last decreasing doubling moves theta from `start`, none leaves t = 1.
template <class T>
__global__ void doubling_decide_kernel(SurrogateTerms<T> terms, const T* start, const T* step, const double* partials,
                                       int blocks, double tol, T* theta, IterationFlags* flags) {
    __shared__ double losses[kDoublingSteps];
    for (int k = threadIdx.x; k < kDoublingSteps; k += blockDim.x)
        losses[k] = sum_partials(partials, blocks, kDoublingSteps, k);
    const core::MemoryAlongStep m = step_memory(terms, start, step);
    __shared__ int chosen;
    __shared__ double data_value;
    if (threadIdx.x == 0) {
        chosen = -1;
        double best = flags->objective;  // f at t = 1
        double u = 2.0;
        for (int k = 0; k < kDoublingSteps && u <= core::kLargestMajorizerStep; ++k, u *= 2.0) {
            const double data = losses[k] * (1.0 / terms.weight_sum);
            const double trial = data + m.at(u);
            if (!(isfinite(trial) && core::plain_decrease(trial, best) && trial < best)) break;
            best = trial;
            chosen = k;
            data_value = data;
        }
    }
    __syncthreads();
    if (chosen < 0) return;
    move_along(terms, start, step, ldexp(1.0, chosen + 1), data_value, tol, theta, flags);
}

template <class T>
__global__ void gradient_kernel(SurrogateTerms<T> terms, const T* theta, const T* gx, const double* s_partials,
                                int blocks, T* g) {
    gradient_into(terms, theta, gx, s_partials, blocks, g);
}

template <class T>
__global__ void lamm_proposals_kernel(SurrogateTerms<T> terms, const T* theta, const T* g, const T* mask,
                                      double lambda_value, int trials, const IterationFlags* flags,
                                      LammTrials<T> out) {
    const std::int64_t d = terms.d, p = terms.p;
    const double phi = flags->phi;
    // Each trial's point by one thread, as the CPU driver forms it.
    for (int k = threadIdx.x; k < trials; k += blockDim.x) {
        T* candidate = out.candidates + k * d;
        T change[1024];
        core::lamm_proposal<T>(d, theta, g, mask, lambda_value, ldexp(phi, k), candidate, change);
        double dot = 0.0, change2 = 0.0, candidate2 = 0.0;
        for (std::int64_t j = 0; j < d; ++j) {
            dot += static_cast<double>(g[j]) * static_cast<double>(change[j]);
            change2 += static_cast<double>(change[j]) * static_cast<double>(change[j]);
            candidate2 += static_cast<double>(candidate[j]) * static_cast<double>(candidate[j]);
            if (j < p) out.feature_changes[j + k * p] = change[j];
        }
        if (terms.intercept) out.intercept_changes[k] = change[p];
        out.gradient_dot_change[k] = dot;
        out.change_norm2[k] = change2;
        out.candidate_norm2[k] = candidate2;
    }
    __syncthreads();
    for (int k = 0; k < trials; ++k) {
        const double memory = memory_value(terms, out.candidates + k * d);
        if (threadIdx.x == 0) out.memory[k] = memory;
    }
}

template <class T>
__global__ void lamm_decide_kernel(SurrogateTerms<T> terms, int trials, const double* partials, int blocks,
                                   double tol, LammTrials<T> candidates, const T* mask, LammJudgement judgement,
                                   T* theta, IterationFlags* flags) {
    __shared__ int chosen;
    if (threadIdx.x == 0) {
        chosen = -1;
        int restarted = 0;
        const double value = flags->objective;
        double slack = core::kMajorizationSlack;
        if (judgement.accelerated) {
            const double start_scale = fabs(flags->start_objective), scale = fabs(value);
            slack = core::rounding_slack(start_scale > scale ? start_scale : scale, core::machine_epsilon<T>());
        }
        double phi = flags->phi;
        for (int k = 0; k < trials; ++k) {
            const double data = sum_partials(partials, blocks, kLammTrialsPerPass, k) / terms.weight_sum;
            const double candidate_value = data + candidates.memory[k];
            const double bound = core::majorization_bound(value, candidates.gradient_dot_change[k], phi,
                                                          sqrt(candidates.change_norm2[k]));
            if (core::majorization_holds(candidate_value, bound, slack)) {
                const T* candidate = candidates.candidates + k * terms.d;
                if (judgement.restart_check &&
                    candidate_value + judgement.lambda_value * core::masked_l1_norm(terms.d, candidate, mask) >
                        flags->base_objective + judgement.lambda_value * core::masked_l1_norm(terms.d, theta, mask)) {
                    restarted = 1;  // phi stays the accepted trial's
                    break;
                }
                chosen = k;
                const double change = sqrt(candidates.change_norm2[k]);
                const double norm = sqrt(candidates.candidate_norm2[k]);
                flags->objective = candidate_value;
                flags->base_objective = candidate_value;
                flags->accepted_phi = phi;
                flags->phi = core::phi_after_acceptance(phi);
                flags->change_norm = change;
                flags->theta_norm = norm;
                flags->converged = core::step_converged(change, norm, tol);
                break;
            }
            phi = core::phi_after_rejection(phi);
        }
        flags->accepted = chosen >= 0;
        flags->restarted = restarted;
        flags->trial_advance = chosen;
        if (chosen < 0) flags->phi = phi;
    }
    __syncthreads();
    if (chosen >= 0)
        for (std::int64_t j = threadIdx.x; j < terms.d; j += blockDim.x)
            theta[j] = candidates.candidates[chosen * terms.d + j];
}

template <class T>
__global__ void extrapolate_kernel(std::int64_t d, const T* theta, const T* previous, double beta, T* point) {
    const T scaled = static_cast<T>(beta);
    for (std::int64_t j = threadIdx.x; j < d; j += blockDim.x) point[j] = theta[j] + scaled * (theta[j] - previous[j]);
}

template <class T>
__global__ void point_objective_kernel(SurrogateTerms<T> terms, const T* point, const double* partials, int blocks,
                                       bool is_theta, IterationFlags* flags) {
    const double memory = memory_value(terms, point);
    if (threadIdx.x != 0) return;
    const double value = sum_partials(partials, blocks, 1, 0) / terms.weight_sum + memory;
    flags->objective = value;
    if (is_theta) flags->base_objective = value;
    flags->t_advance = 0.0;
    flags->trial_advance = -1;
}

template <class T>
__global__ void information_update_kernel(std::int64_t d, const T* J, const T* G, T* J_next) {
    for (std::int64_t e = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; e < d * d;
         e += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
        const std::int64_t i = e / d, j = e - i * d;  // row-major
        J_next[e] = J[e] + gram_at(G, d, i, j);
    }
}

}  // namespace

void launch_start_objective(cudaStream_t stream, const double* partials, int blocks, double weight_sum,
                            IterationFlags* flags) {
    start_objective_kernel<<<1, 32, 0, stream>>>(partials, blocks, weight_sum, flags);
    RH_CUDA_LAUNCHED();
}

template <class T>
void launch_newton_system(cudaStream_t stream, const SurrogateTerms<T>& terms, const T* theta, const T* gx,
                          const double* s_partials, int blocks, const T* G, T* g, T* H, IterationFlags* flags) {
    newton_system_kernel<T><<<1, kThreads, 0, stream>>>(terms, theta, gx, s_partials, blocks, G, g, H, flags);
    RH_CUDA_LAUNCHED();
}

template <class T>
void launch_line_search_decide(cudaStream_t stream, const SurrogateTerms<T>& terms, T* theta, const T* step,
                               const double* partials, int blocks, double tol, IterationFlags* flags) {
    line_search_decide_kernel<T><<<1, kThreads, 0, stream>>>(terms, theta, step, partials, blocks, tol, flags);
    RH_CUDA_LAUNCHED();
}

template <class T>
void launch_majorizer_matrix(cudaStream_t stream, const SurrogateTerms<T>& terms, const T* G, T* H,
                             IterationFlags* flags) {
    majorizer_matrix_kernel<T><<<1, kThreads, 0, stream>>>(terms, G, H, flags);
    RH_CUDA_LAUNCHED();
}

template <class T>
void launch_doubling_decide(cudaStream_t stream, const SurrogateTerms<T>& terms, const T* start, const T* step,
                            const double* partials, int blocks, double tol, T* theta, IterationFlags* flags) {
    doubling_decide_kernel<T><<<1, kThreads, 0, stream>>>(terms, start, step, partials, blocks, tol, theta, flags);
    RH_CUDA_LAUNCHED();
}

template <class T>
void launch_gradient(cudaStream_t stream, const SurrogateTerms<T>& terms, const T* theta, const T* gx,
                     const double* s_partials, int blocks, T* g) {
    gradient_kernel<T><<<1, kThreads, 0, stream>>>(terms, theta, gx, s_partials, blocks, g);
    RH_CUDA_LAUNCHED();
}

template <class T>
void launch_lamm_proposals(cudaStream_t stream, const SurrogateTerms<T>& terms, const T* theta, const T* g,
                           const T* mask, double lambda_value, int trials, const IterationFlags* flags,
                           const LammTrials<T>& out) {
    lamm_proposals_kernel<T><<<1, kThreads, 0, stream>>>(terms, theta, g, mask, lambda_value, trials, flags, out);
    RH_CUDA_LAUNCHED();
}

template <class T>
void launch_lamm_decide(cudaStream_t stream, const SurrogateTerms<T>& terms, int trials, const double* partials,
                        int blocks, double tol, const LammTrials<T>& candidates, const T* mask,
                        const LammJudgement& judgement, T* theta, IterationFlags* flags) {
    lamm_decide_kernel<T><<<1, kThreads, 0, stream>>>(terms, trials, partials, blocks, tol, candidates, mask,
                                                       judgement, theta, flags);
    RH_CUDA_LAUNCHED();
}

template <class T>
void launch_extrapolate(cudaStream_t stream, std::int64_t d, const T* theta, const T* previous, double beta,
                        T* point) {
    extrapolate_kernel<T><<<1, kThreads, 0, stream>>>(d, theta, previous, beta, point);
    RH_CUDA_LAUNCHED();
}

template <class T>
void launch_point_objective(cudaStream_t stream, const SurrogateTerms<T>& terms, const T* point,
                            const double* partials, int blocks, bool is_theta, IterationFlags* flags) {
    point_objective_kernel<T><<<1, kThreads, 0, stream>>>(terms, point, partials, blocks, is_theta, flags);
    RH_CUDA_LAUNCHED();
}

template <class T>
void launch_information_update(cudaStream_t stream, std::int64_t d, const T* J, const T* G, T* J_next) {
    information_update_kernel<T><<<row_blocks(d * d), kThreads, 0, stream>>>(d, J, G, J_next);
    RH_CUDA_LAUNCHED();
}

#define RH_INSTANTIATE(T)                                                                                           \
    template void launch_newton_system<T>(cudaStream_t, const SurrogateTerms<T>&, const T*, const T*,              \
                                          const double*, int, const T*, T*, T*, IterationFlags*);                  \
    template void launch_line_search_decide<T>(cudaStream_t, const SurrogateTerms<T>&, T*, const T*,               \
                                               const double*, int, double, IterationFlags*);                       \
    template void launch_majorizer_matrix<T>(cudaStream_t, const SurrogateTerms<T>&, const T*, T*,                 \
                                             IterationFlags*);                                                     \
    template void launch_doubling_decide<T>(cudaStream_t, const SurrogateTerms<T>&, const T*, const T*,            \
                                            const double*, int, double, T*, IterationFlags*);                      \
    template void launch_gradient<T>(cudaStream_t, const SurrogateTerms<T>&, const T*, const T*, const double*,    \
                                     int, T*);                                                                     \
    template void launch_lamm_proposals<T>(cudaStream_t, const SurrogateTerms<T>&, const T*, const T*, const T*,   \
                                           double, int, const IterationFlags*, const LammTrials<T>&);              \
    template void launch_lamm_decide<T>(cudaStream_t, const SurrogateTerms<T>&, int, const double*, int, double,   \
                                        const LammTrials<T>&, const T*, const LammJudgement&, T*,                  \
                                        IterationFlags*);                                                          \
    template void launch_extrapolate<T>(cudaStream_t, std::int64_t, const T*, const T*, double, T*);              \
    template void launch_point_objective<T>(cudaStream_t, const SurrogateTerms<T>&, const T*, const double*, int,  \
                                            bool, IterationFlags*);                                                \
    template void launch_information_update<T>(cudaStream_t, std::int64_t, const T*, const T*, T*);
RH_INSTANTIATE(float)
RH_INSTANTIATE(double)
#undef RH_INSTANTIATE

}  // namespace rh::cuda

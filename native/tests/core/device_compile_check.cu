// Compiled by nvcc as a CTest (no GPU needed): the contract's host/device
// functions (core/huber.hpp, core/soft_threshold.hpp, core/solver_rules.hpp,
// core/surrogate_terms.hpp, core/solve_rule.hpp: amendment 0002's rules
// too; the line search's steps, the memory term along a step and LAMM's
// proposal) are
// callable from a CUDA kernel.
#include <cstdint>

#include "core/huber.hpp"
#include "core/memory_along_step.hpp"
#include "core/search_steps.hpp"
#include "core/soft_threshold.hpp"
#include "core/solve_rule.hpp"
#include "core/solver_rules.hpp"
#include "core/surrogate_terms.hpp"
#include "core/vector_sums.hpp"

template <class T>
__global__ void huber_terms(std::int64_t n, const T* r, T tau, T h, T* loss, T* score, T* curvature, T* shrunk) {
    const std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x;
    if (i >= n) return;
    loss[i] = rh::core::huber_loss(r[i], tau) + rh::core::huber_loss_fast(r[i], tau, T(0.5) * tau * tau);
    score[i] = rh::core::huber_score(r[i], tau);
    curvature[i] = rh::core::smoothed_curvature(r[i], tau, h) +
                   rh::core::smoothed_curvature_fast(r[i], tau, h, T(1) / (T(2) * h));
    shrunk[i] = rh::core::soft_threshold(r[i], tau) * rh::core::history_direction_entry(r[i], T(1));
    if (rh::core::step_converged(1.0, 2.0, 1e-6) || rh::core::plain_decrease(1.0, 2.0)) shrunk[i] += T(0);
    // amendment 0002: the solve rule, the majorization test with a slack, LAMM's stall test and momentum
    const double rcond = rh::core::reciprocal_condition(2.0, 3.0);
    const double slack = rh::core::rounding_slack(1.0, rh::core::machine_epsilon<T>());
    if (rh::core::regular_solve_allowed<T>(rcond, 3) && rh::core::majorization_holds(1.0, 2.0, slack) &&
        rh::core::lamm_stalled(30, 1e-3, 2e-3, 1.0, 1.0, 1e-6) && rh::core::momentum_next(1.0) > 1.0)
        shrunk[i] += T(0);
    // the line search's steps and the memory term along a step
    const T theta[1] = {r[i]}, step[1] = {T(1)};
    T candidate[1];
    double ahead[4];
    const auto steps = rh::core::SearchSteps<T>::halving(1, theta, step);
    rh::core::MemoryAlongStep memory;
    if (steps.upcoming(steps.first(), ahead, 4) > 0 && !steps.form(ahead[0], candidate) && memory.at(ahead[0]) > 1.0)
        shrunk[i] += T(0);
    if (rh::core::index_order_norm(1, theta) + rh::core::index_order_dot(1, theta, step) > 1.0) shrunk[i] += T(0);
    // LAMM's proposal, through both of its paths (phi a power of two, and not)
    const T mask[1] = {T(1)};
    T change[1];
    rh::core::lamm_proposal(1, theta, step, mask, 0.5, 2.0, candidate, change);
    rh::core::lamm_proposal(1, theta, step, mask, 0.5, 1e-8, candidate, change);
    shrunk[i] += candidate[0] * T(0);
}

template __global__ void huber_terms<float>(std::int64_t, const float*, float, float, float*, float*, float*, float*);
template __global__ void huber_terms<double>(std::int64_t, const double*, double, double, double*, double*, double*,
                                             double*);

int main() { return 0; }

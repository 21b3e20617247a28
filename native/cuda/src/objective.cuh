// The d-sized work of an iteration, on the device, each kernel over
// ceil(d / 8) blocks (a group of them per trial point) whose last block
// combines the parts in a fixed order: the gradient and the Newton matrix of the
// surrogate objective (ALGORITHM.md), the memory part of f at the trial
// points of a pass, and the information update. No decision is made here:
// core's drivers make them (the host-driven solve, host_driven_solve.cu, or
// the block solver on the device). The solve ladder's kernels are in
// ladder_kernels.cuh.
#pragma once

#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>

#include "core/memory_along_step.hpp"
#include "huber_kernels.cuh"

namespace rh::cuda {

// The Newton (or majorizer) system's verdicts, in device memory (and a
// pinned host copy): written by the matrix's assembly and the solve ladder's
// rungs, read by the host-driven solve (its fallback to the ladder's next
// rungs) and by the block solver's rung.
struct SystemFlags {
    double rcond = 0.0;  // of the last factored matrix
    double norm1 = 0.0;  // ||H||_1
    int step_ok = 0;     // the last solve gave a usable step
    int symmetric = 0;   // the matrix is exactly symmetric
    int info = 0;        // the last factorization's info
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

// The trial points of one pass the host asks about: at most kPassPoints
// (every halving of a line search, every doubling of the majorizer's step,
// LAMM's trials of one pass).
inline constexpr int kPassPoints = 27;

// What a pass gives back to the host in one read: the data losses
// sum_i w_i loss(r_i) at each trial point, the memory part of f at each
// point (as rounded in T), the memory term's quadratic along a Newton step
// (core::MemoryAlongStep: the line search's trials), and the system's flags.
struct PassRecord {
    double losses[kPassPoints];
    double memory[kPassPoints];
    core::MemoryAlongStep along;
    SystemFlags system;
    double point_loss;    // a point's pass (the start, a point the driver jumps to),
    double point_memory;  // kept apart from the trials a pass launched after it evaluates
};

// The slot of a step t in its pass's record: the halvings t = 2^-k at k,
// the majorizer's doublings u = 2^(k+1) at k.
RH_HOST_DEVICE inline int pass_slot(double t) {
    int exponent = 0;
    ::frexp(t, &exponent);  // t = 0.5 * 2^exponent
    return t <= 1.0 ? 1 - exponent : exponent - 2;
}

// Where the blocks of a multi-block kernel below leave their parts of a
// result for the group's last block (grid_last_block.cuh): `values`
// (grid_scratch_values(d) doubles) and `counters` (kGridCounters, zero
// between launches; the engine zeroes them once). The kernels of one
// engine's stream run one after another, so they share one scratch.
struct GridScratch {
    double* values = nullptr;
    unsigned* counters = nullptr;
};
inline constexpr int kGridCounters = kPassPoints + 1;
// The memory kernels' rows (kPassPoints points and the two vectors of the
// memory term along a step); the ladder's step and its blocks' maxima.
inline std::int64_t grid_scratch_values(std::int64_t d) { return (kPassPoints + 2) * d + 2 * d + 64; }

// g = grad f(theta) (d) and H = (G + J)/N + ridge I (column-major, full;
// G: SYRK's upper triangle, column-major); flags: symmetric, norm1.
// gx: X' s (p), s_partials: the scoring pass's partial sums of s. Over
// ceil(d / kWarps) blocks: a warp a column of H, a thread a row of g; the
// last block writes the flags. H, g and the flags have the bits the one
// block of block_solver.cu forms (objective_device.cuh's functions).
// `terms_on_device` (when given): the same terms in device memory, which the
// kernel reads instead of `terms` (batch_constants.cuh); the host's `terms`
// still gives the launch its shape (d).
template <class T>
void launch_newton_system(cudaStream_t stream, const SurrogateTerms<T>& terms, const T* theta, const T* gx,
                          const double* s_partials, int blocks, const T* G, T* g, T* H, SystemFlags* flags,
                          const GridScratch& scratch, const SurrogateTerms<T>* terms_on_device = nullptr);

// Systems up to this size take the Cholesky rung in one block (factor,
// inverse, rcond and step in shared memory) instead of cuSOLVER's potrf and
// potrs, whose several launches dominate an iteration at such sizes.
inline constexpr std::int64_t kSmallSystem = 48;  // two d x d factors in 48 KB of shared memory

// M = (G_w + J)/N + ridge I into H (G_w: the Gram with the row weights w,
// the majorizer of amendment 0002), as launch_newton_system forms H.
template <class T>
void launch_majorizer_matrix(cudaStream_t stream, const SurrogateTerms<T>& terms, const T* G, T* H,
                             SystemFlags* flags, const GridScratch& scratch);

template <class T>
void launch_gradient(cudaStream_t stream, const SurrogateTerms<T>& terms, const T* theta, const T* gx,
                     const double* s_partials, int blocks, T* g);

// The losses the pass's row kernel left: the k-th of K sums over
// `blocks` blocks' partials (block order), as the memory kernels below
// write them into record->losses.
struct PassLosses {
    const double* partials = nullptr;
    int blocks = 0;
    int K = 0;
};

// The points theta - t_k step, t_k = first * 2^(k * exponent_step) for k <
// count (each rounded in T as core::SearchSteps forms it), into `points`
// (d x count, column-major); the memory part of f at each and its loss
// into record->memory and record->losses; the memory term's quadratic
// along the step into record->along. `record` may be the host's pinned
// record: the kernel writes it directly. A group of ceil(d / kWarps)
// blocks per point (a warp a row of J D) and one for the memory term along
// the step; each group's last block adds the rows in memory_value's order,
// so every value has the bits of memory_value's (and the along's a and
// history0 those of memory_value at theta). `terms_on_device` as
// launch_newton_system's.
template <class T>
void launch_search_memory(cudaStream_t stream, const SurrogateTerms<T>& terms, const T* theta, const T* step,
                          double first, int exponent_step, int count, T* points, const PassLosses& losses,
                          PassRecord* record, const GridScratch& scratch,
                          const SurrogateTerms<T>* terms_on_device = nullptr);

// The memory part of f at `count` points (d x count, column-major) and
// their losses into memory_out and losses_out (the host's pinned record's
// fields, say). A group of blocks per point, as launch_search_memory's.
template <class T>
void launch_point_memory(cudaStream_t stream, const SurrogateTerms<T>& terms, const T* points, int count,
                         const PassLosses& losses, double* losses_out, double* memory_out,
                         const GridScratch& scratch);

// What the host reads after a pass, written into its pinned memory by the
// device (no copy engine: a kernel): the system's flags into
// record->system (when flags is not null) and up to two d-sized vectors.
template <class T>
void launch_publish(cudaStream_t stream, const SystemFlags* flags, PassRecord* record, std::int64_t n1,
                    const T* values1, T* host1, std::int64_t n2, const T* values2, T* host2);

// What the host's driver hands a pass, read by the device from its pinned
// memory (a kernel): the pass inputs (when host_inputs is not null) and n
// values.
template <class T>
void launch_receive(cudaStream_t stream, const PassInputs* host_inputs, PassInputs* inputs, std::int64_t n,
                    const T* host_values, T* values);

// J_next = J + G (G: SYRK's upper triangle, column-major; J row-major).
template <class T>
void launch_information_update(cudaStream_t stream, std::int64_t d, const T* J, const T* G, T* J_next);

}  // namespace rh::cuda

// The solve ladder of the Newton system H step = g on the device
// (ALGORITHM.md, "solve"; the same rungs and test as the CPU fast path's
// ladder, native/cpu/solve_ladder.hpp):
//   1. Cholesky, when H is exactly symmetric, the factorization succeeds,
//      rcond_1(H) > eps * d and the step is finite;
//   2. LU with partial pivoting on the same terms;
//   3. the minimum-norm least-squares step by SVD (singular values below
//      eps * d * s_max count as zero), its workspace created on first need;
//      for an exactly symmetric H through its eigendecomposition (syevd: the
//      singular values are |lambda|, the same step, several times cheaper
//      than gesvd at d in the hundreds), gesvd when that fails or H is not
//      symmetric.
// rcond_1 is exact: 1 / (||H||_1 ||H^-1||_1) from the factorization's
// inverse. Up to d = kSmallSystem the Cholesky rung is one kernel (H^-1 by Gauss-Jordan
// elimination, whose pivots are the factorization's: objective_device.cuh). The Cholesky rung runs without a host round trip (its verdict
// goes to SystemFlags.step_ok); the others run only when it refused.
#pragma once

#include <cuda_runtime.h>
#include <cusolverDn.h>

#include <cstdint>

#include "core/diagnostics.hpp"
#include "engine_internal.cuh"
#include "objective.cuh"

namespace rh::cuda {

template <class T>
class LinearSolver {
public:
    // Buffers for d x d systems (grown once per parameter count): now when
    // the Cholesky rung needs cuSOLVER's (d > kSmallSystem), else on the
    // first fallback (the small rung needs none: a cold stream's engine
    // makes five allocations fewer).
    void reserve(int device, cusolverDnHandle_t handle, std::int64_t d);

    // Whether rung 1 is the one-block kernel (d <= kSmallSystem): then the
    // evaluator may form the system and take this rung in one launch
    // (launch_small_newton_step) instead of calling cholesky_step.
    static constexpr bool small_rung(std::int64_t d) { return d <= kSmallSystem; }

    // Rung 1, asynchronously: step and flags.step_ok.
    // `scratch`: the engine's (objective.cuh), for the step from H^-1.
    void cholesky_step(cudaStream_t stream, cusolverDnHandle_t handle, std::int64_t d, const T* H, const T* g,
                       T* step, SystemFlags* flags, const GridScratch& scratch);
    // Rungs 2 and 3 after the Cholesky rung refused: returns the route that
    // gave the step (reads flags back: host synchronizations counted in
    // *syncs); throws when no rung could solve the system.
    core::SolveRoute fallback_step(cudaStream_t stream, cusolverDnHandle_t handle, std::int64_t d, const T* H,
                                   const T* g, T* step, SystemFlags* flags, SystemFlags* host_flags,
                                   int* syncs, const GridScratch& scratch);

    std::int64_t allocations() const noexcept { return allocations_; }
    std::int64_t bytes() const noexcept;

private:
    template <class U>
    void grow(DeviceArray<U>& array, int device, std::int64_t count) {
        allocations_ += array.reserve(device, count);
    }
    // The factorizations' buffers for the reserved d (a no-op once there).
    void reserve_dense(cusolverDnHandle_t handle);

    int device_ = -1;
    std::int64_t reserved_d_ = 0;  // the d reserve asked for
    std::int64_t d_ = 0;           // the d the dense buffers hold
    DeviceArray<T> factor_, inverse_, work_;
    DeviceArray<int> pivots_, info_;
    // SVD (lazy): singular values, U, V', its work and rwork; the symmetric
    // eigendecomposition's work (lazy).
    DeviceArray<T> singular_values_, left_, right_, svd_work_, svd_rwork_, eigen_work_;
    int work_size_ = 0, svd_work_size_ = 0, eigen_work_size_ = 0;
    std::int64_t allocations_ = 0;
};

}  // namespace rh::cuda

// RH_HOST_DEVICE marks a function of the contract that both host engines
// and CUDA kernels call: `__host__ __device__` under nvcc, nothing for a
// host compiler. Every header of native/core that defines such a function
// includes only the standard library's <cmath>, <cstdint> and <limits> (the
// solver drivers also <utility>: std::swap, constexpr, which the CUDA build
// calls on the device with --expt-relaxed-constexpr).
#pragma once

#if defined(__CUDACC__)
#define RH_HOST_DEVICE __host__ __device__
#else
#define RH_HOST_DEVICE
#endif

// Before a __host__ __device__ template that calls its argument's methods
// (the solver drivers over an evaluator): a host evaluator's instantiation
// runs on the host only, a device evaluator's on the device only, so nvcc's
// cross-space check is off for it.
#if defined(__CUDACC__)
#define RH_EXEC_CHECK_DISABLE _Pragma("nv_exec_check_disable")
#else
#define RH_EXEC_CHECK_DISABLE
#endif

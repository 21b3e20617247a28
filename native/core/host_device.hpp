// RH_HOST_DEVICE marks a function of the contract that both host engines
// and CUDA kernels call: `__host__ __device__` under nvcc, nothing for a
// host compiler. Every header of native/core that defines such a function
// includes only the standard library's <cmath>, <cstdint> and <limits>.
#pragma once

#if defined(__CUDACC__)
#define RH_HOST_DEVICE __host__ __device__
#else
#define RH_HOST_DEVICE
#endif

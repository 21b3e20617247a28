// Sums over a d-vector in double, in index order: the dot products and
// norms the solver drivers ask their evaluators for (the convergence test,
// LAMM's majorization bound), formed alike by the CPU fast path, the CUDA
// block solver on the device and the CUDA host-driven solve. (The rounding
// also follows the compiler's contraction setting: none on the host.)
#pragma once

#include <cmath>
#include <cstdint>

#include "core/host_device.hpp"

namespace rh::core {

template <class T>
RH_HOST_DEVICE inline double index_order_dot(std::int64_t d, const T* a, const T* b) noexcept {
    double sum = 0.0;
    for (std::int64_t j = 0; j < d; ++j) sum += static_cast<double>(a[j]) * static_cast<double>(b[j]);
    return sum;
}

// ||x||_2 = sqrt(index_order_dot(x, x)).
template <class T>
RH_HOST_DEVICE inline double index_order_norm(std::int64_t d, const T* x) noexcept {
    return ::sqrt(index_order_dot(d, x, x));
}

}  // namespace rh::core

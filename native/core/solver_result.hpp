// The outcome of one solver run on a batch.
#pragma once

#include "core/diagnostics.hpp"

namespace rh::core {

template <class T>
struct SolverResult {
    const T* theta = nullptr;  // theta_hat (d), in one of the driver's buffers
    int iterations = 0;
    bool converged = false;
    double objective = 0.0;  // F at theta_hat (without the L1 term)
    StopReason reason = StopReason::converged;
};

}  // namespace rh::core

// The outcome of one solver run on a batch; theta lives in the workspace.
#pragma once

#include "core/diagnostics.hpp"

namespace rh::cpu {

struct SolverResult {
    int iterations = 0;
    bool converged = false;
    double objective = 0.0;  // F at the returned theta (without the L1 term)
};

}  // namespace rh::cpu

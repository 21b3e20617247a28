// The numerical configuration every engine receives (ALGORITHM.md).
#pragma once

namespace rh::core {

enum class Penalty : int { none = 0, l1 = 1 };

struct SolverConfig {
    double tau = 1.345;
    Penalty penalty = Penalty::none;
    double lambda_scale = 1.0;
    double bandwidth_scale = 1.0;
    bool fit_intercept = true;
    int max_iter = 100;
    double tol = 1e-6;
    double ridge = 1e-8;
};

}  // namespace rh::core

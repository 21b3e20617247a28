// Per-batch schedules (ALGORITHM.md, "Per-batch schedules"), formed in double.
#pragma once

#include <cstdint>

#include "core/solver_config.hpp"

namespace rh::core {

// h = min(bandwidth_scale / (sqrt(N) * ln(max(p, 2))), tau)
double bandwidth(double tau, double bandwidth_scale, double weight_sum_after, std::int64_t n_features);

// lambda = lambda_scale * tau * sqrt(ln(max(p, 2)) / N) for "l1", else 0
double lambda_level(Penalty penalty, double tau, double lambda_scale, double weight_sum_after,
                    std::int64_t n_features);

}  // namespace rh::core

// The counters of the next state (ALGORITHM.md, "Closing the batch"); the
// coefficients and J_new = J_prev + Z' diag(w kappa(r_hat)) Z are the
// engine's to compute.
#pragma once

#include <cstdint>

#include "core/state_view.hpp"

namespace rh::core {

inline StateCounters next_counters(const StateCounters& previous, std::int64_t rows, double lambda_value,
                                   double weight_sum_after) noexcept {
    StateCounters next = previous;
    next.n_samples_seen += rows;
    next.batch_count += 1;
    next.previous_lambda = lambda_value;
    next.weight_sum = weight_sum_after;
    return next;
}

}  // namespace rh::core

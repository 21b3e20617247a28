// Non-owning views of the renewable state: what the engine reads (StateView)
// and where it writes the next state (StateOutput). Arrays are row-major,
// coefficients of length d and information d x d, intercept last. The meat
// S (d x d, amendment 0003: sum over batches of Z' diag(w score(r)^2) Z at
// each batch's final coefficients) is tracked when both views give it and
// left alone when both leave it null (inference off, or unknown).
#pragma once

#include <cstdint>

namespace rh::core {

struct StateCounters {
    std::int64_t n_features_in = 0;
    bool fit_intercept = true;
    std::int64_t n_samples_seen = 0;
    std::int64_t batch_count = 0;
    double previous_lambda = 0.0;
    double weight_sum = 0.0;

    std::int64_t n_parameters() const noexcept { return n_features_in + (fit_intercept ? 1 : 0); }
};

template <class T>
struct StateView {
    const T* coefficients = nullptr;  // d
    const T* information = nullptr;   // d x d
    StateCounters counters;
    const T* meat = nullptr;  // d x d, or null: not tracked
};

template <class T>
struct StateOutput {
    T* coefficients = nullptr;  // d
    T* information = nullptr;   // d x d
    StateCounters counters;
    T* meat = nullptr;  // d x d, or null: not tracked
};

}  // namespace rh::core

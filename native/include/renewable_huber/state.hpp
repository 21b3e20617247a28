// What a Regressor carries from one batch to the next (ALGORITHM.md, "State
// carried between batches"; amendment 0003's meat), and the diagnostics of
// its last batch.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace renewable_huber {

template <class T>
struct State {
    std::vector<T> coefficients;  // d = n_features_in + fit_intercept, intercept last
    std::vector<T> information;   // d x d, row-major
    // The meat S (d x d) when tracked (inference on, penalty "none"), else none.
    std::optional<std::vector<T>> meat;
    std::int64_t n_features_in = 0;
    bool fit_intercept = true;
    std::int64_t n_samples_seen = 0;
    std::int64_t batch_count = 0;
    double previous_lambda = 0.0;
    double weight_sum = 0.0;
    std::vector<std::string> feature_names;       // empty: positional features
    std::optional<std::int64_t> converged_batches;  // none: unknown (a format 1 or 2 checkpoint)

    std::int64_t n_parameters() const noexcept { return n_features_in + (fit_intercept ? 1 : 0); }
};

struct Diagnostics {
    int iterations = 0;
    bool converged = false;
    double objective = 0.0;
    double lambda_value = 0.0;
    double bandwidth = 0.0;
    bool used_regularized_fallback = false;
    std::string solve_route = "none";     // "cholesky", "lu", "least_squares", "none"
    std::string stop_reason = "converged";  // "converged", "max_iter", "line_search_exhausted", ...
};

}  // namespace renewable_huber

#include "core/invariants.hpp"

#include <cstdint>

#include "core/finite_values.hpp"

namespace rh::core {


bool all_finite(const float* values, std::int64_t count) noexcept {
    return all_finite_values(values, count);
}
bool all_finite(const double* values, std::int64_t count) noexcept {
    return all_finite_values(values, count);
}

void check_config(const SolverConfig& c) {
    auto fail = [](const char* message) { throw EngineError(Status::invalid_argument, message); };
    if (!(std::isfinite(c.tau) && c.tau > 0)) fail("tau must be greater than zero");
    if (c.penalty != Penalty::none && c.penalty != Penalty::l1) fail("penalty must be either 'none' or 'l1'");
    if (!(std::isfinite(c.lambda_scale) && c.lambda_scale >= 0)) fail("lambda_scale must be non-negative");
    if (!(std::isfinite(c.bandwidth_scale) && c.bandwidth_scale > 0))
        fail("bandwidth_scale must be greater than zero");
    if (c.max_iter < 1) fail("max_iter must be at least one");
    if (!(std::isfinite(c.tol) && c.tol > 0)) fail("tol must be greater than zero");
    if (!(std::isfinite(c.ridge) && c.ridge >= 0)) fail("ridge must be non-negative");
}

void check_counters(const StateCounters& s) {
    auto fail = [](const char* message) { throw EngineError(Status::invalid_state, message); };
    if (s.n_samples_seen < 0 || s.batch_count < 0 || s.n_features_in < 0)
        fail("state counters must be non-negative");
    if (!(std::isfinite(s.previous_lambda) && s.previous_lambda >= 0))
        fail("state previous lambda must be finite and non-negative");
    if (!(std::isfinite(s.weight_sum) && s.weight_sum >= 0))
        fail("state weight sum must be finite and non-negative");
    if (s.n_samples_seen > 0 && s.weight_sum <= 0)
        fail("state weight sum must be positive after observing samples");
}

void check_batch_shape(std::int64_t rows, std::int64_t features, const StateCounters& counters) {
    if (rows < 1) throw EngineError(Status::invalid_argument, "X must have at least one row");
    if (features < 1) throw EngineError(Status::invalid_argument, "X must have at least one feature");
    if (features != counters.n_features_in)
        throw EngineError(Status::invalid_argument,
                          "X has " + std::to_string(features) + " features, but the state expects " +
                              std::to_string(counters.n_features_in));
    check_room_for_batch(rows, counters);
}

void check_room_for_batch(std::int64_t rows, const StateCounters& counters) {
    constexpr std::int64_t largest = std::numeric_limits<std::int64_t>::max();
    if (counters.n_samples_seen > largest - rows)
        throw EngineError(Status::invalid_state, "state counters would overflow: n_samples_seen + " +
                                                     std::to_string(rows) + " rows exceeds " +
                                                     std::to_string(largest));
    if (counters.batch_count == largest)
        throw EngineError(Status::invalid_state,
                          "state counters would overflow: batch_count + 1 exceeds " + std::to_string(largest));
}

}  // namespace rh::core

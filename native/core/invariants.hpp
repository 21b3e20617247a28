// Checks every engine runs before an update touches anything (NATIVE.md,
// "Shared core"). Each failure throws EngineError with a message naming the
// argument, so the caller's state is never half-updated.
#pragma once

#include <cmath>
#include <cstdint>
#include <limits>
#include <string>

#include "core/batch_view.hpp"
#include "core/solver_config.hpp"
#include "core/state_view.hpp"
#include "core/status.hpp"

namespace rh::core {

void check_config(const SolverConfig& config);
void check_counters(const StateCounters& counters);
void check_batch_shape(std::int64_t rows, std::int64_t features, const StateCounters& counters);
// The counters are signed 64-bit: a batch of `rows` must not carry
// n_samples_seen or batch_count past their largest value (a hostile
// checkpoint can start a stream next to it).
void check_room_for_batch(std::int64_t rows, const StateCounters& counters);

// The message of every engine whose Newton system overflowed (finite inputs
// too large for T): word for word the Python layer's
// exceptions.system_overflow_message, which raises NumericalOverflowError
// for it whatever the engine (recognised by its prefix).
inline constexpr const char* kSystemOverflowPrefix = "the Newton system overflowed ";
template <class T>
std::string system_overflow_message() {
    return std::string(kSystemOverflowPrefix) + (sizeof(T) == sizeof(double) ? "float64" : "float32") +
           ": the batch's values are too large for this precision; scale X and y (for example, standardize each "
           "column) and fit again";
}

// True when every value is finite (a portable loop; the CPU engine passes
// its multiversioned test, cpu/platform/finite_scan.hpp, to the checks below).
bool all_finite(const float* values, std::int64_t count) noexcept;
bool all_finite(const double* values, std::int64_t count) noexcept;

// The finiteness test the checks use unless an engine gives its own.
struct PortableFiniteness {
    template <class T>
    bool operator()(const T* values, std::int64_t count) const noexcept {
        return all_finite(values, count);
    }
};

template <class T>
void check_state_values(const StateView<T>& state) {
    const std::int64_t d = state.counters.n_parameters();
    if (d > 0 && (state.coefficients == nullptr || state.information == nullptr))
        throw EngineError(Status::invalid_state, "state arrays must not be null");
    if (!all_finite(state.coefficients, d))
        throw EngineError(Status::invalid_state, "state coefficients must contain only finite values");
    if (!all_finite(state.information, d * d))
        throw EngineError(Status::invalid_state, "state information must contain only finite values");
    if (state.meat != nullptr && !all_finite(state.meat, d * d))
        throw EngineError(Status::invalid_state, "state meat must contain only finite values");
}

// X, y and the optional weights: finite; weights non-negative with a positive
// sum. x_finite() tests X (the engine splits that test over its threads),
// finite(values, count) the vectors. The messages are the Python
// validators' (validation.py), word for word. A partition of a batch
// (positive_weight_sum false) may weigh nothing: another carries the weight.
template <class T, class XFinite, class Finite = PortableFiniteness>
void check_batch_values(const BatchView<T>& batch, XFinite&& x_finite, Finite finite = {},
                        bool positive_weight_sum = true) {
    const std::int64_t n = batch.rows;
    if (batch.X == nullptr || batch.y == nullptr)
        throw EngineError(Status::invalid_argument, "X and y must not be null");
    if (!x_finite())
        throw EngineError(Status::non_finite_input, "X must not contain NaN or infinite values");
    if (!finite(batch.y, n))
        throw EngineError(Status::non_finite_input, "y must not contain NaN or infinite values");
    if (batch.sample_weight != nullptr) {
        const T* w = batch.sample_weight;
        if (!finite(w, n))
            throw EngineError(Status::non_finite_input, "sample_weight must not contain NaN or infinite values");
        bool any_positive = false;
        for (std::int64_t i = 0; i < n; ++i) {
            if (w[i] < T(0)) throw EngineError(Status::invalid_weights, "sample_weight must be non-negative");
            any_positive = any_positive || w[i] > T(0);
        }
        if (positive_weight_sum && !any_positive)
            throw EngineError(Status::invalid_weights, "sample_weight must have a positive sum");
    }
}

template <class T>
void check_batch_values(const BatchView<T>& batch) {
    check_batch_values(batch, [&] { return all_finite(batch.X, batch.rows * batch.features); });
}

}  // namespace rh::core

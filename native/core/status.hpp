// The error model shared by every engine: a status code plus a message.
//
// Engines throw EngineError internally; each boundary (Python module, C ABI)
// translates it exactly once, keeping the message.
#pragma once

#include <stdexcept>
#include <string>

namespace rh::core {

enum class Status : int {
    ok = 0,
    invalid_argument = 1,    // bad shapes, sizes or configuration values
    non_finite_input = 2,    // NaN/Inf in X, y or sample_weight
    invalid_weights = 3,     // negative weights or a non-positive weight sum
    invalid_state = 4,       // inconsistent or non-finite state
    numerical_failure = 5,   // a factorization or solve that could not be completed
    internal_error = 6,
    out_of_memory = 7,       // an allocation (host or device) failed
    device_error = 8,        // the accelerator reported an error
    unavailable = 9,         // no usable device, driver or runtime
};

const char* status_name(Status status) noexcept;

class EngineError : public std::runtime_error {
public:
    EngineError(Status status, const std::string& message) : std::runtime_error(message), status_(status) {}
    Status status() const noexcept { return status_; }

private:
    Status status_;
};

}  // namespace rh::core

#include "core/status.hpp"

namespace rh::core {

const char* status_name(Status status) noexcept {
    switch (status) {
        case Status::ok: return "ok";
        case Status::invalid_argument: return "invalid_argument";
        case Status::non_finite_input: return "non_finite_input";
        case Status::invalid_weights: return "invalid_weights";
        case Status::invalid_state: return "invalid_state";
        case Status::numerical_failure: return "numerical_failure";
        case Status::internal_error: return "internal_error";
        case Status::out_of_memory: return "out_of_memory";
        case Status::device_error: return "device_error";
        case Status::unavailable: return "unavailable";
    }
    return "unknown_status";
}

}  // namespace rh::core

#include "core/diagnostics.hpp"

namespace rh::core {

const char* solve_route_name(SolveRoute route) noexcept {
    switch (route) {
        case SolveRoute::none: return "none";
        case SolveRoute::cholesky: return "cholesky";
        case SolveRoute::lu: return "lu";
        case SolveRoute::least_squares: return "least_squares";
    }
    return "unknown";
}

const char* stop_reason_name(StopReason reason) noexcept {
    switch (reason) {
        case StopReason::converged: return "converged";
        case StopReason::max_iter: return "max_iter";
        case StopReason::line_search_exhausted: return "line_search_exhausted";
        case StopReason::majorization_exhausted: return "majorization_trials_exhausted";
    }
    return "unknown";
}

}  // namespace rh::core

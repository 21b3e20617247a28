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

}  // namespace rh::core

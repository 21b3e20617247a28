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

const char* kernel_path_name(KernelPath path) noexcept {
    switch (path) {
        case KernelPath::reference_order: return "reference_order";
        case KernelPath::fast: return "fast";
    }
    return "unknown";
}

}  // namespace rh::core

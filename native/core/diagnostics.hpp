// What happened while one batch was absorbed (ALGORITHM.md, "Closing the
// batch"): the contract's fields, the same for every engine. Engines report
// their own counters beside these (cpu/cpu_diagnostics.hpp).
#pragma once

#include "core/host_device.hpp"

namespace rh::core {

// Ordered from the cheapest to the most robust route of the solve ladder.
enum class SolveRoute : int { none = 0, cholesky = 1, lu = 2, least_squares = 3 };

const char* solve_route_name(SolveRoute route) noexcept;

// Why a solver stopped (amendment 0002): the step-size test passed (or the
// step rounded to the current point), the iteration budget ran out, neither
// the Newton nor the majorizer step decreased f at any step length, or 40
// LAMM trials in a row failed the majorization test.
enum class StopReason : int { converged = 0, max_iter = 1, line_search_exhausted = 2, majorization_exhausted = 3 };

const char* stop_reason_name(StopReason reason) noexcept;

struct UpdateDiagnostics {
    int iterations = 0;
    bool converged = false;
    double objective = 0.0;
    double lambda_value = 0.0;
    double bandwidth = 0.0;
    // The most robust route any Newton system of this batch needed, and how
    // many systems took each route.
    SolveRoute solve_route = SolveRoute::none;
    int cholesky_solves = 0;
    int lu_solves = 0;
    int least_squares_solves = 0;
    StopReason stop_reason = StopReason::converged;
    // Newton iterations that took the majorizer's step (amendment 0002).
    int majorizer_steps = 0;

    RH_HOST_DEVICE bool used_least_squares_fallback() const noexcept { return least_squares_solves > 0; }

    RH_HOST_DEVICE void record(SolveRoute route) noexcept {
        if (route == SolveRoute::cholesky) ++cholesky_solves;
        if (route == SolveRoute::lu) ++lu_solves;
        if (route == SolveRoute::least_squares) ++least_squares_solves;
        if (static_cast<int>(route) > static_cast<int>(solve_route)) solve_route = route;
    }
};

}  // namespace rh::core

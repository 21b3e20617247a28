// What happened while one batch was absorbed, including the solve route.
#pragma once

namespace rh::core {

// Ordered from the cheapest to the most robust route of the solve ladder.
enum class SolveRoute : int { none = 0, cholesky = 1, lu = 2, least_squares = 3 };

const char* solve_route_name(SolveRoute route) noexcept;

// Which kernels of the CPU engine ran the batch (docs/native-cpu.md):
// reference_order mirrors the NumPy reference operation by operation (so it
// reproduces line-search decisions made at the rounding noise floor); fast
// is the same contract with a cheaper, differently rounded arithmetic.
enum class KernelPath : int { reference_order = 0, fast = 1 };

const char* kernel_path_name(KernelPath path) noexcept;

struct UpdateDiagnostics {
    int iterations = 0;
    bool converged = false;
    double objective = 0.0;
    double lambda_value = 0.0;
    double bandwidth = 0.0;
    // The most robust route any Newton system of this batch needed.
    SolveRoute solve_route = SolveRoute::none;
    int cholesky_solves = 0;
    int lu_solves = 0;
    int least_squares_solves = 0;
    KernelPath kernel_path = KernelPath::reference_order;
    // Fast path only: how the weighted Gram Z' diag(w kappa) Z was formed
    // (full = gather + SYRK of every row with weight; incremental = SYRK of
    // the rows whose weight changed), and how many rows those updates touched.
    int gram_full_updates = 0;
    int gram_incremental_updates = 0;
    long long gram_changed_rows = 0;
    // Fast path threads: row-split dispatches on the engine's pool, those in
    // which the caller had to run a worker's part (the worker had no core),
    // and the thread count the update ended with (1 after two late ones).
    int parallel_dispatches = 0;
    int late_dispatches = 0;
    int threads_at_end = 1;

    bool used_least_squares_fallback() const noexcept { return least_squares_solves > 0; }

    void record(SolveRoute route) noexcept {
        if (route == SolveRoute::cholesky) ++cholesky_solves;
        if (route == SolveRoute::lu) ++lu_solves;
        if (route == SolveRoute::least_squares) ++least_squares_solves;
        if (static_cast<int>(route) > static_cast<int>(solve_route)) solve_route = route;
    }
};

}  // namespace rh::core

// What the CPU engine reports about a batch beyond the contract's
// diagnostics (core/diagnostics.hpp): which kernel path ran, how the fast
// path formed its Gram, and how its threads went.
#pragma once

#include "core/diagnostics.hpp"

namespace rh::cpu {

// reference_order mirrors the NumPy reference operation by operation (so it
// reproduces line-search decisions made at the rounding noise floor); fast
// is the same contract with a cheaper, differently rounded arithmetic
// (kernel_choice.hpp).
enum class KernelPath : int { reference_order = 0, fast = 1 };

const char* kernel_path_name(KernelPath path) noexcept;

// How the fast path's weighted Gram Z' diag(w kappa) Z was formed: full
// (every row with weight) or incremental (the rows whose weight changed),
// and how many rows those incremental updates touched.
struct GramCounters {
    int full_updates = 0;
    int incremental_updates = 0;
    long long changed_rows = 0;
};

struct CpuUpdateDiagnostics : core::UpdateDiagnostics {
    KernelPath kernel_path = KernelPath::reference_order;
    GramCounters gram;
    // Fast path threads: row-split dispatches on the engine's pool, those in
    // which the caller had to run a worker's part (the worker had no core),
    // and the thread count the update ended with (1 when it ended inside a
    // stretch the caller ran alone: platform/late_worker_policy.hpp).
    int parallel_dispatches = 0;
    int late_dispatches = 0;
    int threads_at_end = 1;
};

}  // namespace rh::cpu

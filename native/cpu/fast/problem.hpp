// The fast path's view of one batch (docs/native-cpu.md, "Two kernel
// paths"): an immutable Problem, built once per update by the engine, and
// the mutable Context every pass works in (the engine's buffers and the
// part runner), kept apart so that what a function may change is in its
// signature.
#pragma once

#include <cstdint>

#include "cpu/fast/fast_buffers.hpp"
#include "cpu/parallel_reduce.hpp"

namespace rh::cpu::fast {

// Switches of the fast path's shortcuts; each gives the same bits on or off
// (tests turn them off to compare).
struct FastOptions {
    // LAMM: an iteration's first trial, when it is expected to be rejected,
    // evaluated together with the next one (fused_passes.hpp, pairs_trials):
    // narrow rows always, wider rows when X has at least this many bytes.
    bool pair_trials = true;
    std::int64_t wide_pair_min_bytes = std::int64_t{16} << 20;
    // LAMM: trials near an accepted point from a local Huber model (rows of
    // up to kLocalMaxFeatures features; local_huber_model.hpp).
    bool local_models = true;
    // Every part of a split pass on the calling thread: the partition stays
    // the one the thread count fixed, so the bits do not change.
    bool serial_parts = false;
};

template <class T>
struct Problem {
    std::int64_t rows = 0;
    std::int64_t features = 0;  // p
    std::int64_t d = 0;         // p + intercept
    bool intercept = true;
    const T* X = nullptr;       // rows x p, row-major (the caller's buffer)
    // Column panels of X for the narrow passes (p <= narrow_pass_max_features),
    // built by the engine while it tested X; row begin's panels at
    // panels + begin * panel_columns.
    const T* panels = nullptr;
    std::int64_t panel_columns = 0;
    const T* y = nullptr;
    const T* w = nullptr;
    const T* theta_prev = nullptr;
    const T* information_prev = nullptr;  // J_prev, d x d
    const T* history_direction = nullptr; // sign(theta_prev) * mask
    bool uses_history = false;
    double history_coefficient = 0.0;     // (Wprev / N) previous_lambda
    double weight_sum = 1.0;              // N
    T tau = T(1);
    T bandwidth = T(1);
    T ridge = T(0);
    FastOptions options;

    // The rows [begin, end)'s panels (narrow rows only).
    const T* panels_of(std::int64_t begin) const { return panels + begin * panel_columns; }
};

// What the passes change: the engine's fast-path buffers, and the runner
// of the row-parallel parts (its partition is fixed by the thread count).
template <class T>
struct Context {
    FastBuffers<T>& ws;
    PartRunner& runner;

    int row_parts(const Problem<T>& P) const { return runner.row_parts(P.rows, P.features); }
};

}  // namespace rh::cpu::fast

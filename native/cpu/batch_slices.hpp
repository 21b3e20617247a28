// Consecutive row slices of one batch absorbed in order, each as
// Engine::update absorbs a batch: bit for bit what a caller's loop of
// update() over the same slices gives, in one call (one GIL release in the
// binding, one check of the arrays' shapes). The states between slices live
// in two scratch states owned here; the last slice writes `next`. The
// caller's state is never written: a failure in any slice leaves it as it
// was (and `next` unspecified), so the caller commits all slices or none.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/batch_view.hpp"
#include "core/solver_config.hpp"
#include "core/state_view.hpp"
#include "core/status.hpp"
#include "cpu/cpu_diagnostics.hpp"
#include "cpu/engine.hpp"

namespace rh::cpu {

// How many slices `rows` rows make, cut every `slice_rows` (the last may be shorter).
inline std::int64_t slice_count(std::int64_t rows, std::int64_t slice_rows) {
    return (rows + slice_rows - 1) / slice_rows;
}

template <class T>
std::vector<CpuUpdateDiagnostics> update_slices(Engine<T>& engine, const core::StateView<T>& state,
                                                const core::BatchView<T>& batch, std::int64_t slice_rows,
                                                const core::SolverConfig& config, core::StateOutput<T>& next) {
    if (slice_rows < 1)
        throw core::EngineError(core::Status::invalid_argument,
                                "batch_size must be a positive integer, got " + std::to_string(slice_rows));
    if (batch.rows < 1) throw core::EngineError(core::Status::invalid_argument, "X must have at least one row");
    const std::int64_t count = slice_count(batch.rows, slice_rows);
    const std::int64_t d = state.counters.n_parameters();
    const bool meat = state.meat != nullptr;
    // Two scratch states the slices alternate between (none for one slice).
    std::vector<T> scratch(count > 1 ? 2 * static_cast<std::size_t>(d + d * d + (meat ? d * d : 0)) : 0);
    auto scratch_state = [&](int which) {
        T* base = scratch.data() + which * (d + d * d + (meat ? d * d : 0));
        return core::StateOutput<T>{base, base + d, {}, meat ? base + d + d * d : nullptr};
    };
    std::vector<CpuUpdateDiagnostics> diagnostics;
    diagnostics.reserve(static_cast<std::size_t>(count));
    core::StateView<T> current = state;
    for (std::int64_t k = 0; k < count; ++k) {
        const std::int64_t start = k * slice_rows;
        const std::int64_t rows = start + slice_rows <= batch.rows ? slice_rows : batch.rows - start;
        const core::BatchView<T> slice{batch.X + start * batch.features, batch.y + start,
                                       batch.sample_weight == nullptr ? nullptr : batch.sample_weight + start, rows,
                                       batch.features};
        const bool last = k + 1 == count;
        core::StateOutput<T> out = last ? next : scratch_state(static_cast<int>(k % 2));
        out.counters = current.counters;
        diagnostics.push_back(engine.update(current, slice, config, out));
        if (last) {
            next.counters = out.counters;
        } else {
            current = core::StateView<T>{out.coefficients, out.information, out.counters, out.meat};
        }
    }
    return diagnostics;
}

}  // namespace rh::cpu

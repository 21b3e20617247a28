// Small deterministic batches for the engine tests.
#pragma once

#include <cstdint>
#include <random>
#include <vector>

#include "core/batch_view.hpp"
#include "core/solver_config.hpp"
#include "core/state_view.hpp"
#include "cpu/engine.hpp"

namespace rh::test {

template <class T>
struct Batch {
    std::int64_t rows, features;
    std::vector<T> X, y;
    core::BatchView<T> view() const { return {X.data(), y.data(), nullptr, rows, features}; }
};

template <class T>
Batch<T> linear_batch(std::int64_t rows, std::int64_t features, unsigned seed = 1) {
    std::mt19937_64 rng(seed);
    std::normal_distribution<double> normal;
    Batch<T> batch{rows, features, std::vector<T>(rows * features), std::vector<T>(rows)};
    for (std::int64_t i = 0; i < rows; ++i) {
        double fitted = 0.5;
        for (std::int64_t j = 0; j < features; ++j) {
            const double x = normal(rng);
            batch.X[i * features + j] = T(x);
            fitted += x * (j + 1) * 0.25;
        }
        batch.y[i] = T(fitted + 0.1 * normal(rng) + (i % 17 == 0 ? 8.0 : 0.0));
    }
    return batch;
}

// A state with its own storage, fed from an engine's output.
template <class T>
struct OwnedState {
    std::vector<T> coefficients, information;
    core::StateCounters counters;
    std::vector<T> meat;  // empty: the meat is not tracked

    OwnedState(std::int64_t features, bool fit_intercept, bool track_meat = false) {
        counters.n_features_in = features;
        counters.fit_intercept = fit_intercept;
        const auto d = counters.n_parameters();
        coefficients.assign(d, T(0));
        information.assign(d * d, T(0));
        if (track_meat) meat.assign(d * d, T(0));
    }
    const T* meat_or_null() const { return meat.empty() ? nullptr : meat.data(); }
    core::StateView<T> view() const { return {coefficients.data(), information.data(), counters, meat_or_null()}; }
    core::StateOutput<T> output() {
        return {coefficients.data(), information.data(), counters, meat.empty() ? nullptr : meat.data()};
    }
};

// One update from `state` into a fresh state; returns the diagnostics.
template <class T>
cpu::CpuUpdateDiagnostics update_into(cpu::Engine<T>& engine, const OwnedState<T>& state, const Batch<T>& batch,
                                    const core::SolverConfig& config, OwnedState<T>& next) {
    auto output = next.output();
    const auto diagnostics = engine.update(state.view(), batch.view(), config, output);
    next.counters = output.counters;
    return diagnostics;
}

}  // namespace rh::test

#include "cpu/engine.hpp"

#include <algorithm>
#include <limits>
#include <optional>
#include <string>

#include "core/batch_closing.hpp"
#include "core/invariants.hpp"
#include "core/lamm_driver.hpp"
#include "core/newton_driver.hpp"
#include "core/schedules.hpp"
#include "core/status.hpp"
#include "core/surrogate_terms.hpp"
#include "cpu/fast/gram_cache.hpp"
#include "cpu/fast/information_update.hpp"
#include "cpu/fast/meat_update.hpp"
#include "cpu/fast/newton_evaluator.hpp"
#include "cpu/kernels/local_model_kernels.hpp"
#include "cpu/kernels/narrow_passes.hpp"
#include "cpu/platform/blas_thread_lease.hpp"
#include "cpu/platform/finite_scan.hpp"
#include "cpu/reference/lamm_evaluator.hpp"
#include "cpu/reference/newton_evaluator.hpp"
#include "cpu/reference/pairwise_sum.hpp"
#include "cpu/reference/surrogate_objective.hpp"

namespace rh::cpu {

namespace {

// Z = [X, 1] (the intercept column last).
template <class T>
void append_intercept_column(const T* X, std::int64_t rows, std::int64_t features, T* design) {
    const std::int64_t d = features + 1;
    for (std::int64_t i = 0; i < rows; ++i) {
        std::copy(X + i * features, X + (i + 1) * features, design + i * d);
        design[i * d + features] = T(1);
    }
}

}  // namespace

template <class T>
void Engine<T>::check_blas_sizes(std::int64_t rows, std::int64_t d, const char* what, const char* plural) {
    constexpr std::int64_t largest = std::numeric_limits<blas::index_t>::max();
    if (rows * d > largest || d * d > largest)
        throw core::EngineError(core::Status::invalid_argument, std::string(what) +
                                " too large for the 32-bit BLAS interface; split it into smaller " + plural);
}

template <class T>
void Engine<T>::reserve_unit_weights(std::int64_t rows) {
    if (static_cast<std::int64_t>(unit_weights_.size()) >= rows) return;
    growth_.grow(unit_weights_, rows);
    std::fill(unit_weights_.begin(), unit_weights_.end(), T(1));
}

template <class T>
bool Engine<T>::rows_finite(const T* X, std::int64_t rows, std::int64_t features) {
    return scan_rows(std::clamp(threads_.threads(), 1, kMaxParts), X, rows, features, nullptr);
}

template <class T>
bool Engine<T>::scan_rows(int threads, const T* X, std::int64_t rows, std::int64_t features, T* panels) {
    const int parts = row_parts(threads, rows, features);
    bool finite[kMaxParts];
    auto task = [&](int part) {
        const RowRange range = part_rows(part, parts, rows);
        const T* first = X + range.begin * features;
        finite[part] = panels != nullptr
                           ? fast::narrow_build_panels(range.size(), features, first,
                                                       panels + range.begin * fast::narrow_panel_columns(features))
                           : all_finite(first, range.size() * features);
    };
    pool_.run(parts, task);
    return std::all_of(finite, finite + parts, [](bool f) { return f; });
}

template <class T>
KernelPath Engine<T>::check(const core::StateView<T>& state, const core::BatchView<T>& batch,
                            const core::SolverConfig& config, const core::StateOutput<T>& next) {
    core::check_config(config);
    core::check_counters(state.counters);
    if (state.counters.fit_intercept != config.fit_intercept)
        throw core::EngineError(core::Status::invalid_state, "state fit_intercept does not match the configuration");
    core::check_batch_shape(batch.rows, batch.features, state.counters);
    core::check_state_values(state);
    check_blas_sizes(batch.rows, state.counters.n_parameters(), "batch", "batches");
    if (next.coefficients == nullptr || next.information == nullptr)
        throw core::EngineError(core::Status::invalid_argument, "output state arrays must not be null");
    if ((state.meat == nullptr) != (next.meat == nullptr))
        throw core::EngineError(core::Status::invalid_argument,
                                "the meat is tracked when both the state and the output give it, or neither");
    return choose_kernel_path(kernel_, batch.rows, state.counters.n_parameters());
}

template <class T>
typename Engine<T>::BatchTerms Engine<T>::prepare(const core::StateView<T>& state, const core::BatchView<T>& batch,
                                                  const core::SolverConfig& config) {
    const std::int64_t n = batch.rows, p = batch.features, d = state.counters.n_parameters();
    BatchTerms terms;
    terms.weights = batch.sample_weight != nullptr ? batch.sample_weight : unit_weights_.data();
    const T* w = terms.weights;
    // The batch's weight as NumPy sums it.
    const T batch_weight = reference::pairwise_sum<T>(n, [=](std::int64_t i) { return w[i]; });
    terms.weight_sum_before = state.counters.weight_sum;
    terms.weight_sum_after = terms.weight_sum_before + static_cast<double>(batch_weight);
    terms.bandwidth = core::bandwidth(config.tau, config.bandwidth_scale, terms.weight_sum_after, p);
    terms.lambda_value =
        core::lambda_level(config.penalty, config.tau, config.lambda_scale, terms.weight_sum_after, p);
    terms.uses_history = core::uses_history(config, state.counters);
    terms.history_coefficient = core::history_coefficient(terms.weight_sum_before, terms.weight_sum_after,
                                                          state.counters.previous_lambda);
    core::penalty_mask_and_history(d, p, state.coefficients, penalty_mask_.data(), history_direction_.data());
    return terms;
}

template <class T>
CpuUpdateDiagnostics Engine<T>::update(const core::StateView<T>& state, const core::BatchView<T>& batch,
                                       const core::SolverConfig& config, core::StateOutput<T>& next) {
    // 1. Check everything before any write to the state or the outputs (the
    //    buffers, the engine's own, are sized on the way).
    const int threads = std::clamp(threads_.threads(), 1, kMaxParts);
    const KernelPath path = check(state, batch, config, next);
    const std::int64_t n = batch.rows, p = batch.features, d = state.counters.n_parameters();
    const bool fast_path = path == KernelPath::fast;
    // The narrow fast path builds its column panels of X while it tests X.
    const bool narrow = fast_path && p <= fast::narrow_pass_max_features<T>;
    // Threads: the reference-order path sizes the BLAS pool (n_jobs); the
    // fast path runs BLAS single-threaded and splits its row passes over the
    // same number of threads on its own pool (no BLAS thread left spinning
    // after the update).
    // The BLAS pool is leased at that size for the whole update: another
    // engine's update on another thread never runs it at its own size
    // (platform/blas_thread_lease.hpp).
    const BlasThreadLease blas_lease(fast_path ? 1 : threads);
    // Rouses the workers of a split update now, so their futex wake-up
    // overlaps the preparation below instead of the first passes.
    if (fast_path && row_parts(threads, n, p) > 1) pool_.wake();
    if (test_hooks_.inside_update) test_hooks_.inside_update();
    for (auto* buffer :
         {&theta_, &candidate_, &step_, &gradient_, &previous_, &extrapolated_, &penalty_mask_, &history_direction_})
        growth_.grow(*buffer, d);
    if (batch.sample_weight == nullptr) reserve_unit_weights(n);
    ladder_.reserve(growth_, d);
    if (fast_path) {
        fast_buffers_.reserve(growth_, n, d, threads);
        if (state.meat != nullptr) fast_buffers_.reserve_meat(growth_, n, d);
        if (narrow) fast_buffers_.reserve_panels(growth_, n, p);
        if (config.penalty == core::Penalty::l1 && p <= fast::kLocalMaxFeatures)
            fast_buffers_.reserve_local_model(growth_, n, d);
    } else {
        reference_buffers_.reserve(growth_, n, d, config.fit_intercept);
    }
    core::check_batch_values(
        batch, [&] { return scan_rows(threads, batch.X, n, p, narrow ? fast_buffers_.narrow_panels.data() : nullptr); },
        MultiversionFiniteness{});

    // 2. The batch's weights, schedules and surrogate terms.
    const BatchTerms terms = prepare(state, batch, config);
    CpuUpdateDiagnostics diagnostics;
    diagnostics.lambda_value = terms.lambda_value;
    diagnostics.bandwidth = terms.bandwidth;
    diagnostics.kernel_path = path;

    // 3. Solve, and close the batch: J_new = J_prev + Z' diag(w kappa(r_hat)) Z
    //    and S_new = S_prev + Z' diag(w score(r_hat)^2) Z (written by the
    //    solve), theta_hat and the next state's counters.
    const core::SolverResult<T> result = fast_path
                                             ? solve_fast(state, batch, config, terms, threads, next, diagnostics)
                                             : solve_reference(state, batch, config, terms, next, diagnostics);
    diagnostics.iterations = result.iterations;
    diagnostics.converged = result.converged;
    diagnostics.stop_reason = result.reason;
    diagnostics.objective = core::reported_objective(config.penalty, result.objective, terms.lambda_value, d,
                                                     result.theta, penalty_mask_.data());
    std::copy(result.theta, result.theta + d, next.coefficients);
    next.counters = core::next_counters(state.counters, n, terms.lambda_value, terms.weight_sum_after);
    return diagnostics;
}

template <class T>
core::SolverResult<T> Engine<T>::solve_fast(const core::StateView<T>& state, const core::BatchView<T>& batch,
                                            const core::SolverConfig& config, const BatchTerms& terms, int threads,
                                            const core::StateOutput<T>& next, CpuUpdateDiagnostics& diagnostics) {
    const std::int64_t p = batch.features, d = state.counters.n_parameters();
    fast::Problem<T> problem;
    problem.rows = batch.rows;
    problem.features = p;
    problem.d = d;
    problem.intercept = config.fit_intercept;
    problem.X = batch.X;
    if (p <= fast::narrow_pass_max_features<T>) {
        problem.panels = fast_buffers_.narrow_panels.data();
        problem.panel_columns = fast::narrow_panel_columns(p);
    }
    problem.y = batch.y;
    problem.w = terms.weights;
    problem.theta_prev = state.coefficients;
    problem.information_prev = state.information;
    problem.history_direction = history_direction_.data();
    problem.uses_history = terms.uses_history;
    problem.history_coefficient = terms.history_coefficient;
    problem.weight_sum = terms.weight_sum_after;
    problem.tau = static_cast<T>(config.tau);
    problem.bandwidth = static_cast<T>(terms.bandwidth);
    problem.ridge = static_cast<T>(config.ridge);
    problem.options = fast_options_;
    PartRunner runner(&pool_, threads);
    if (fast_options_.serial_parts) runner.run_serially();
    fast::Context<T> context{fast_buffers_, runner};
    fast::GramCache<T> gram(problem, context);

    core::SolverResult<T> result;
    if (config.penalty == core::Penalty::l1) {
        fast::LammEvaluator<T> evaluator(problem, context, gram, diagnostics.gram);
        result = core::lamm(evaluator, d, state.coefficients, penalty_mask_.data(), terms.lambda_value,
                            config.max_iter, config.tol, driver_buffers());
        evaluator.finish(result.theta);
        last_shortcuts_ = evaluator.shortcuts;
        fast::information_update(problem, context, gram, nullptr, next.information, diagnostics.gram);
    } else {
        fast::NewtonEvaluator<T> evaluator(problem, context, gram, ladder_, diagnostics.gram, gradient_.data());
        result = core::damped_newton(evaluator, d, state.coefficients, config.max_iter, config.tol,
                                     driver_buffers(), diagnostics);
        fast::information_update(problem, context, gram, evaluator.current_scores(), next.information,
                                 diagnostics.gram);
    }
    if (state.meat != nullptr) fast::meat_update(problem, context, gram, state.meat, next.meat);
    diagnostics.parallel_dispatches = runner.dispatches();
    diagnostics.late_dispatches = runner.late_dispatches();
    diagnostics.threads_at_end = runner.serial() ? 1 : threads;
    return result;
}

template <class T>
core::SolverResult<T> Engine<T>::solve_reference(const core::StateView<T>& state, const core::BatchView<T>& batch,
                                                 const core::SolverConfig& config, const BatchTerms& terms,
                                                 const core::StateOutput<T>& next, CpuUpdateDiagnostics& diagnostics) {
    const std::int64_t n = batch.rows, p = batch.features, d = state.counters.n_parameters();
    reference::ReferenceBuffers<T>& ws = reference_buffers_;
    const T* design = batch.X;
    if (config.fit_intercept) {
        append_intercept_column(batch.X, n, p, ws.design.data());
        design = ws.design.data();
    }
    reference::SurrogateObjective<T> objective;
    objective.rows = n;
    objective.d = d;
    objective.design = design;
    objective.response = batch.y;
    objective.weights = terms.weights;
    objective.theta_prev = state.coefficients;
    objective.information_prev = state.information;
    objective.history_direction = history_direction_.data();
    objective.uses_history = terms.uses_history;
    objective.history_coefficient = static_cast<T>(terms.history_coefficient);
    objective.weight_sum = static_cast<T>(terms.weight_sum_after);
    objective.tau = static_cast<T>(config.tau);
    objective.bandwidth = static_cast<T>(terms.bandwidth);
    objective.ridge = static_cast<T>(config.ridge);
    objective.workspace = &ws;

    core::SolverResult<T> result;
    if (config.penalty == core::Penalty::l1) {
        reference::LammEvaluator<T> evaluator(objective);
        result = core::lamm(evaluator, d, state.coefficients, penalty_mask_.data(), terms.lambda_value,
                            config.max_iter, config.tol, driver_buffers());
    } else {
        reference::NewtonEvaluator<T> evaluator(objective, ladder_, gradient_.data());
        result = core::damped_newton(evaluator, d, state.coefficients, config.max_iter, config.tol,
                                     driver_buffers(), diagnostics);
    }
    // r_hat is the exact residual the solver kept for theta_hat.
    T* gram = ws.gram.data();
    objective.weighted_gram(ws.residual.data(), gram);
    for (std::int64_t k = 0; k < d * d; ++k) next.information[k] = state.information[k] + gram[k];
    if (state.meat != nullptr) {
        objective.score_gram(ws.residual.data(), gram);
        for (std::int64_t k = 0; k < d * d; ++k) next.meat[k] = state.meat[k] + gram[k];
    }
    return result;
}

template <class T>
void Engine<T>::predict(const T* coefficients, std::int64_t features, bool fit_intercept, const T* X,
                        std::int64_t rows, T* out) const {
    if (rows == 0) return;
    if (features < 1) throw core::EngineError(core::Status::invalid_argument, "X must have at least one feature");
    check_blas_sizes(rows, features, "batch", "batches");
    const BlasThreadLease blas_lease(threads_.threads());
    blas::matvec(static_cast<blas::index_t>(rows), static_cast<blas::index_t>(features), X, coefficients, out);
    if (fit_intercept) {
        const T intercept = coefficients[features];
        for (std::int64_t i = 0; i < rows; ++i) out[i] = out[i] + intercept;
    }
}

template class Engine<float>;
template class Engine<double>;

}  // namespace rh::cpu

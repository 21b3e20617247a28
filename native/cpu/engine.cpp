#include "cpu/engine.hpp"

#include <algorithm>
#include <limits>
#include <optional>

#include "core/invariants.hpp"
#include "core/schedules.hpp"
#include "core/status.hpp"
#include "cpu/damped_newton.hpp"
#include "cpu/fast_lamm.hpp"
#include "cpu/fast_path.hpp"
#include "cpu/local_model_kernels.hpp"
#include "cpu/lamm.hpp"
#include "cpu/narrow_passes.hpp"
#include "cpu/pairwise_sum.hpp"
#include "cpu/surrogate_objective.hpp"

namespace rh::cpu {

namespace {

constexpr std::int64_t kLargestBlasDimension = std::numeric_limits<blas::index_t>::max();

void check_blas_sizes(std::int64_t rows, std::int64_t d) {
    if (rows * d > kLargestBlasDimension || d * d > kLargestBlasDimension)
        throw core::EngineError(core::Status::invalid_argument,
                                "batch too large for the 32-bit BLAS interface; split it into smaller batches");
}

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
bool Engine<T>::rows_finite(const T* X, std::int64_t rows, std::int64_t features) {
    return scan_rows(std::clamp(threads_.threads(), 1, fast::kMaxParts), X, rows, features, nullptr);
}

template <class T>
bool Engine<T>::scan_rows(int threads, const T* X, std::int64_t rows, std::int64_t features, T* panels) {
    const int parts = fast::row_parts(threads, rows, features);
    bool finite[fast::kMaxParts];
    auto task = [&](int part) {
        std::int64_t begin, end;
        fast::row_range(part, parts, rows, begin, end);
        const T* first = X + begin * features;
        finite[part] = panels != nullptr
                           ? fast::narrow_build_panels(end - begin, features, first,
                                                       panels + begin * fast::narrow_panel_columns(features))
                           : core::all_finite(first, (end - begin) * features);
    };
    pool_.run(parts, task);
    return std::all_of(finite, finite + parts, [](bool f) { return f; });
}

template <class T>
core::UpdateDiagnostics Engine<T>::update(const core::StateView<T>& state, const core::BatchView<T>& batch,
                                          const core::SolverConfig& config, core::StateOutput<T>& next) {
    // 1. Check everything before any write to the state or the outputs
    //    (the workspaces, the engine's own, are sized on the way).
    core::check_config(config);
    core::check_counters(state.counters);
    if (state.counters.fit_intercept != config.fit_intercept)
        throw core::EngineError(core::Status::invalid_state, "state fit_intercept does not match the configuration");
    core::check_batch_shape(batch.rows, batch.features, state.counters);
    core::check_state_values(state);
    const std::int64_t n = batch.rows, p = batch.features, d = state.counters.n_parameters();
    check_blas_sizes(n, d);
    if (next.coefficients == nullptr || next.information == nullptr)
        throw core::EngineError(core::Status::invalid_argument, "output state arrays must not be null");

    Workspace<T>& ws = workspace_;
    const core::KernelPath path = choose_kernel_path(kernel_, n, d);
    const bool fast_path = path == core::KernelPath::fast;
    // The narrow fast path builds its column panels of X while it tests X
    // (one read of X for both; the workspace is the engine's, not state).
    const bool narrow = fast_path && p <= fast::narrow_pass_max_features<T>;
    // Threads: the reference-order path sizes the BLAS pool (n_jobs); the
    // fast path runs BLAS single-threaded and splits its row passes over
    // the same number of threads on its own pool (no BLAS thread left
    // spinning after the update).
    const int threads = std::clamp(threads_.threads(), 1, fast::kMaxParts);
    std::optional<ThreadPolicy::Scope> pool_scope;
    std::optional<BlasThreadsScope> single_thread_scope;
    if (fast_path) {
        single_thread_scope.emplace(1);
        // Rouses the workers of a split update now, so their futex wake-up
        // overlaps the preparation below instead of the first passes.
        if (fast::row_parts(threads, n, p) > 1) pool_.wake();
    } else {
        pool_scope.emplace(threads_);
    }
    ws.reserve(n, d, config.fit_intercept && !fast_path, batch.sample_weight == nullptr, fast_path ? threads : 1);
    if (narrow) ws.reserve_panels(n, p);
    if (fast_path && config.penalty == core::Penalty::l1 && p <= fast::kLocalMaxFeatures) ws.reserve_local_model(n, d);
    core::check_batch_values(batch, [&] {
        return scan_rows(threads, batch.X, n, p, narrow ? ws.narrow_panels.data() : nullptr);
    });

    // 2. The batch design, weights and schedules.
    const T* design = batch.X;
    if (config.fit_intercept && !fast_path) {
        append_intercept_column(batch.X, n, p, ws.design.data());
        design = ws.design.data();
    }
    const T* weights = batch.sample_weight != nullptr ? batch.sample_weight : ws.unit_weights.data();
    const T batch_weight = pairwise_sum<T>(n, [=](std::int64_t i) { return weights[i]; });
    const double weight_sum_before = state.counters.weight_sum;
    const double weight_sum_after = weight_sum_before + static_cast<double>(batch_weight);
    const double h = core::bandwidth(config.tau, config.bandwidth_scale, weight_sum_after, p);
    const double lambda = core::lambda_level(config.penalty, config.tau, config.lambda_scale, weight_sum_after, p);

    T* mask = ws.penalty_mask.data();
    T* history_direction = ws.history_direction.data();
    for (std::int64_t j = 0; j < d; ++j) {
        mask[j] = j < p ? T(1) : T(0);
        const T c = state.coefficients[j];
        history_direction[j] = (c > T(0) ? T(1) : (c < T(0) ? T(-1) : T(0))) * mask[j];
    }

    core::UpdateDiagnostics diagnostics;
    diagnostics.lambda_value = lambda;
    diagnostics.bandwidth = h;
    diagnostics.kernel_path = path;
    if (fast_path) {
        fast::Problem<T> problem;
        problem.rows = n;
        problem.features = p;
        problem.d = d;
        problem.intercept = config.fit_intercept;
        problem.X = batch.X;
        if (narrow) {
            problem.panels = ws.narrow_panels.data();
            problem.panel_columns = fast::narrow_panel_columns(p);
        }
        problem.y = batch.y;
        problem.w = weights;
        problem.theta_prev = state.coefficients;
        problem.information_prev = state.information;
        problem.history_direction = history_direction;
        problem.uses_history = config.penalty == core::Penalty::l1 && state.counters.n_samples_seen > 0;
        problem.history_coefficient = weight_sum_before / weight_sum_after * state.counters.previous_lambda;
        problem.weight_sum = weight_sum_after;
        problem.tau = static_cast<T>(config.tau);
        problem.bandwidth = static_cast<T>(h);
        problem.ridge = static_cast<T>(config.ridge);
        problem.ws = &ws;
        problem.pool = &pool_;
        problem.threads = threads;
        fast::Gram<T> gram(problem);
        SolverResult result;
        if (config.penalty == core::Penalty::l1) {
            result = fast::lamm(problem, gram, mask, lambda, config.max_iter, config.tol, diagnostics);
            double l1_norm = 0.0;
            for (std::int64_t j = 0; j < d; ++j) l1_norm += std::fabs(static_cast<double>(ws.theta[j])) * mask[j];
            diagnostics.objective = result.objective + lambda * l1_norm;
        } else {
            result = fast::damped_newton(problem, gram, config.max_iter, config.tol, diagnostics);
            diagnostics.objective = result.objective;
        }
        diagnostics.iterations = result.iterations;
        diagnostics.converged = result.converged;
        fast::information_update(problem, gram, next.information, diagnostics);
        diagnostics.parallel_dispatches = problem.dispatches;
        diagnostics.late_dispatches = problem.late_workers;
        diagnostics.threads_at_end = problem.serial ? 1 : problem.threads;
        finish(state, next, n, lambda, weight_sum_after);
        return diagnostics;
    }

    SurrogateObjective<T> objective;
    objective.rows = n;
    objective.d = d;
    objective.design = design;
    objective.response = batch.y;
    objective.weights = weights;
    objective.theta_prev = state.coefficients;
    objective.information_prev = state.information;
    objective.history_direction = history_direction;
    objective.uses_history = config.penalty == core::Penalty::l1 && state.counters.n_samples_seen > 0;
    objective.history_coefficient =
        static_cast<T>(weight_sum_before / weight_sum_after * state.counters.previous_lambda);
    objective.weight_sum = static_cast<T>(weight_sum_after);
    objective.tau = static_cast<T>(config.tau);
    objective.bandwidth = static_cast<T>(h);
    objective.ridge = static_cast<T>(config.ridge);
    objective.workspace = &ws;

    // 3. Solve.
    SolverResult result;
    if (config.penalty == core::Penalty::l1) {
        result = lamm(objective, mask, lambda, config.max_iter, config.tol);
        const T* theta = ws.theta.data();
        const T l1_norm = pairwise_sum<T>(d, [=](std::int64_t j) { return std::fabs(theta[j]) * mask[j]; });
        diagnostics.objective = result.objective + lambda * static_cast<double>(l1_norm);
    } else {
        result = damped_newton(objective, config.max_iter, config.tol, diagnostics);
        diagnostics.objective = result.objective;
    }
    diagnostics.iterations = result.iterations;
    diagnostics.converged = result.converged;

    // 4. Close the batch: J_new = J_prev + Z' diag(w kappa(r_hat)) Z, with r_hat
    //    the exact residual the solver kept for the returned theta.
    T* gram = ws.gram.data();
    objective.weighted_gram(ws.residual.data(), gram);
    for (std::int64_t k = 0; k < d * d; ++k) next.information[k] = state.information[k] + gram[k];
    finish(state, next, n, lambda, weight_sum_after);
    return diagnostics;
}

template <class T>
void Engine<T>::finish(const core::StateView<T>& state, core::StateOutput<T>& next, std::int64_t rows, double lambda,
                       double weight_sum_after) const {
    const std::int64_t d = state.counters.n_parameters();
    std::copy(workspace_.theta.data(), workspace_.theta.data() + d, next.coefficients);
    next.counters = state.counters;
    next.counters.n_samples_seen += rows;
    next.counters.batch_count += 1;
    next.counters.previous_lambda = lambda;
    next.counters.weight_sum = weight_sum_after;
}

template <class T>
void Engine<T>::predict(const T* coefficients, std::int64_t features, bool fit_intercept, const T* X,
                        std::int64_t rows, T* out) const {
    if (rows == 0) return;
    if (features < 1) throw core::EngineError(core::Status::invalid_argument, "X must have at least one feature");
    check_blas_sizes(rows, features);
    ThreadPolicy::Scope thread_scope(threads_);
    blas::matvec(static_cast<blas::index_t>(rows), static_cast<blas::index_t>(features), X, coefficients, out);
    if (fit_intercept) {
        const T intercept = coefficients[features];
        for (std::int64_t i = 0; i < rows; ++i) out[i] = out[i] + intercept;
    }
}

template class Engine<float>;
template class Engine<double>;

}  // namespace rh::cpu

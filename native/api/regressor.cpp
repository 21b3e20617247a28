// Regressor<T> over the C++ CPU engine (cpu/engine.hpp): the Python package's
// estimator checks (validation.py's messages, in its order), then one engine
// update into new arrays, committed only when it succeeded.
#include "renewable_huber/regressor.hpp"

#include <algorithm>
#include <cmath>
#include <new>
#include <sstream>
#include <utility>

#include "checkpoint.hpp"
#include "core/invariants.hpp"
#include "core/status.hpp"
#include "cpu/batch_slices.hpp"
#include "cpu/engine.hpp"
#include "cpu/platform/finite_scan.hpp"

namespace renewable_huber {

namespace {

constexpr const char* kName = "RenewableHuberRegressor";  // the estimator's name in the shared messages

std::string shape_text(std::int64_t rows, std::int64_t cols) {
    std::string text = "(";  // appended piece by piece: g++ 12 warns (-Wrestrict, a false positive) on "(" + ...
    text += std::to_string(rows);
    text += ", ";
    text += std::to_string(cols);
    text += ")";
    return text;
}

// native_adapter.translate: the engine's status and message as the package's error.
[[noreturn]] void rethrow(const rh::core::EngineError& error) {
    const std::string message = error.what();
    switch (error.status()) {
        case rh::core::Status::invalid_argument:
        case rh::core::Status::non_finite_input:
        case rh::core::Status::invalid_weights:
        case rh::core::Status::invalid_state: throw ValidationError(message);
        case rh::core::Status::out_of_memory: throw OutOfMemoryError("native_cpu engine failed (out_of_memory): " + message);
        case rh::core::Status::unavailable: throw BackendUnavailableError("backend='native_cpu' cannot run here: " + message);
        case rh::core::Status::numerical_failure:
            if (message.rfind(rh::core::kSystemOverflowPrefix, 0) == 0) throw NumericalOverflowError(message);
            [[fallthrough]];
        default:
            throw EngineError(std::string("native_cpu engine failed (") + rh::core::status_name(error.status()) +
                              "): " + message);
    }
}

rh::core::SolverConfig solver_config(const Parameters& p) {
    rh::core::SolverConfig c;
    c.tau = p.tau;
    c.penalty = p.penalty == "l1" ? rh::core::Penalty::l1 : rh::core::Penalty::none;
    c.lambda_scale = p.lambda_scale;
    c.bandwidth_scale = p.bandwidth_scale;
    c.fit_intercept = p.fit_intercept;
    c.max_iter = static_cast<int>(p.max_iter);
    c.tol = p.tol;
    c.ridge = p.ridge;
    return c;
}

// The engines this library runs: the CPU engine ("auto" and "numpy" run on it too).
void check_backend(const Parameters& p) {
    if (p.backend == "native_cuda")
        throw BackendUnavailableError(
            "backend='native_cuda' is not available in the renewable-huber C++ library's CPU build: use "
            "backend='native_cpu' (or the Python package's CUDA engine)");
    if (p.backend == "cupy" || p.backend == "torch" || p.backend == "tensorflow")
        throw BackendUnavailableError("backend='" + p.backend +
                                      "' is a Python backend: the C++ library runs backend='native_cpu'");
    if (p.device != "auto" && p.device != "cpu")
        throw BackendUnavailableError("backend='native_cpu' requires device='cpu'");
}

template <class T>
bool finite(const T* values, std::int64_t count) {
    return rh::cpu::all_finite(values, count);
}

[[noreturn]] void fail(const std::string& message) { throw ValidationError(message); }

// validation.py's checks of X's shape, with its messages, in its order.
template <class T>
void check_X_shape(Matrix<T> X, std::optional<std::int64_t> expected) {
    if (X.rows < 0 || X.cols < 0 || (X.data == nullptr && X.rows * X.cols > 0))
        fail("X must be a two-dimensional numeric array. Reshape your data.");
    if (X.rows < 1)
        fail("Found array with 0 sample(s) (shape=" + shape_text(X.rows, X.cols) + ") while a minimum of 1 is required.");
    if (X.cols < 1) fail("0 feature(s) (shape=" + shape_text(X.rows, X.cols) + ") while a minimum of 1 is required.");
    if (expected && X.cols != *expected)
        fail("X has " + std::to_string(X.cols) + " features, but " + kName + " is expecting " +
             std::to_string(*expected) + " features as input");
}

[[noreturn]] void fail_non_finite_X() { fail("X must not contain NaN or infinite values"); }

// validation.py's checks of a batch, with its messages, in its order. X's
// values are the engine's to test (core::check_batch_values, the same
// message, one pass split over its threads); where y or the weights fail
// here, X is tested first, so a batch bad in both names X, as in Python.
template <class T>
void check_batch(Matrix<T> X, Vector<T> y, Vector<T> w, std::optional<std::int64_t> expected) {
    check_X_shape(X, expected);
    try {
        if (y.data == nullptr || y.size != X.rows) fail("X and y must contain the same number of samples");
        if (!finite(y.data, y.size)) fail("y must not contain NaN or infinite values");
        if (w.data == nullptr) return;
        if (w.size != X.rows) fail("sample_weight and X must contain the same number of samples");
        if (!finite(w.data, w.size)) fail("sample_weight must not contain NaN or infinite values");
        double total = 0;
        for (std::int64_t i = 0; i < w.size; ++i) {
            if (w.data[i] < 0) fail("sample_weight must be non-negative");
            total += static_cast<double>(w.data[i]);
        }
        if (!(total > 0)) fail("sample_weight cannot be all zero");
    } catch (const ValidationError&) {
        if (!finite(X.data, X.rows * X.cols)) fail_non_finite_X();
        throw;
    }
}

// Each slice of `batch_size` rows must weigh something (the whole batch's
// weights were checked): partial_fit_batches' message names the slice, as
// in Python (inputs.slice_bounds).
template <class T>
void check_slice_weights(Vector<T> w, std::int64_t batch_size) {
    if (w.data == nullptr || batch_size >= w.size) return;
    const std::int64_t count = rh::cpu::slice_count(w.size, batch_size);
    for (std::int64_t k = 0; k < count; ++k) {
        const std::int64_t start = k * batch_size, stop = std::min(start + batch_size, w.size);
        bool weighs = false;
        for (std::int64_t i = start; i < stop && !weighs; ++i) weighs = w.data[i] > 0;
        if (!weighs)
            fail("sample_weight cannot be all zero (rows " + std::to_string(start) + ":" + std::to_string(stop) +
                 ", batch " + std::to_string(k + 1) + " of " + std::to_string(count) + " of batch_size " +
                 std::to_string(batch_size) + ")");
    }
}

void check_names(const std::vector<std::string>& fitted, const std::vector<std::string>& given) {
    if (!fitted.empty() && !given.empty() && fitted != given)
        throw ValidationError("X feature names must match the names and order used during the first batch");
}

template <class T>
State<T> empty_state(std::int64_t features, const Parameters& p) {
    State<T> s;
    const std::int64_t d = features + (p.fit_intercept ? 1 : 0);
    s.coefficients.assign(static_cast<std::size_t>(d), T(0));
    s.information.assign(static_cast<std::size_t>(d * d), T(0));
    // stream.tracks_meat: inference on, no L1 penalty (which refuses inference).
    if (p.inference && p.penalty == "none") s.meat = std::vector<T>(static_cast<std::size_t>(d * d), T(0));
    s.n_features_in = features;
    s.fit_intercept = p.fit_intercept;
    s.converged_batches = 0;
    return s;
}

}  // namespace

template <class T>
struct Regressor<T>::Engine {
    explicit Engine(const Parameters& p) : cpu(p.n_jobs ? static_cast<int>(*p.n_jobs) : rh::cpu::kLibraryDefaultThreads) {}
    rh::cpu::Engine<T> cpu;
};

template <class T>
Regressor<T>::Regressor(Parameters parameters)
    : parameters_(std::move(parameters)), engine_(std::make_unique<Engine>(parameters_)) {}
template <class T>
Regressor<T>::~Regressor() = default;
template <class T>
Regressor<T>::Regressor(Regressor&&) noexcept = default;
template <class T>
Regressor<T>& Regressor<T>::operator=(Regressor&&) noexcept = default;

template <class T>
const char* Regressor<T>::dtype() noexcept {
    return sizeof(T) == sizeof(double) ? "float64" : "float32";
}

template <class T>
Regressor<T>& Regressor<T>::fit(Matrix<T> X, Vector<T> y, Vector<T> sample_weight,
                                const std::vector<std::string>& feature_names) {
    // A new stream on the same engine (its workspaces stay grown); the old
    // stream comes back if the first batch fails.
    std::optional<State<T>> old_state = std::exchange(state_, std::nullopt);
    std::optional<Diagnostics> old_diagnostics = std::exchange(diagnostics_, std::nullopt);
    try {
        partial_fit(X, y, sample_weight, feature_names);
    } catch (...) {
        state_ = std::move(old_state);
        diagnostics_ = std::move(old_diagnostics);
        throw;
    }
    return *this;
}

template <class T>
Regressor<T>& Regressor<T>::partial_fit(Matrix<T> X, Vector<T> y, Vector<T> sample_weight,
                                        const std::vector<std::string>& feature_names) {
    return absorb(X, y, sample_weight, feature_names, X.rows > 0 ? X.rows : 1);
}

template <class T>
Regressor<T>& Regressor<T>::partial_fit_batches(Matrix<T> X, Vector<T> y, std::int64_t batch_size,
                                                Vector<T> sample_weight,
                                                const std::vector<std::string>& feature_names) {
    if (batch_size < 1)
        throw ValidationError("batch_size must be a positive integer, got " + std::to_string(batch_size));
    return absorb(X, y, sample_weight, feature_names, batch_size);
}

// One batch (batch_size >= its rows) or its consecutive slices, each an
// update (cpu/batch_slices.hpp); committed only when every slice succeeded.
template <class T>
Regressor<T>& Regressor<T>::absorb(Matrix<T> X, Vector<T> y, Vector<T> sample_weight,
                                   const std::vector<std::string>& feature_names, std::int64_t batch_size) {
    parameters_.validate(dtype());
    check_backend(parameters_);
    if (state_) {
        check_names(state_->feature_names, feature_names);
    } else if (!feature_names.empty() && static_cast<std::int64_t>(feature_names.size()) != X.cols) {
        throw ValidationError("X has " + std::to_string(X.cols) + " columns but " +
                              std::to_string(feature_names.size()) + " feature names");
    }
    check_batch(X, y, sample_weight,
                state_ ? std::optional<std::int64_t>(state_->n_features_in) : std::optional<std::int64_t>());
    check_slice_weights(sample_weight, batch_size);
    std::optional<State<T>> first;  // the empty state a new stream starts from
    const State<T>& current = state_ ? *state_ : first.emplace(empty_state<T>(X.cols, parameters_));
    const std::int64_t d = current.n_parameters();
    State<T> next = current;
    rh::core::StateView<T> view{current.coefficients.data(), current.information.data(),
                                rh::core::StateCounters{current.n_features_in, current.fit_intercept,
                                                        current.n_samples_seen, current.batch_count,
                                                        current.previous_lambda, current.weight_sum},
                                current.meat ? current.meat->data() : nullptr};
    rh::core::StateOutput<T> out{next.coefficients.data(), next.information.data(), view.counters,
                                 next.meat ? next.meat->data() : nullptr};
    const rh::core::BatchView<T> batch{X.data, y.data, sample_weight.data, X.rows, X.cols};
    std::vector<rh::cpu::CpuUpdateDiagnostics> slices;
    try {
        slices = rh::cpu::update_slices(engine_->cpu, view, batch, batch_size, solver_config(parameters_), out);
    } catch (const rh::core::EngineError& error) {
        rethrow(error);
    } catch (const std::bad_alloc&) {
        throw OutOfMemoryError("native_cpu engine ran out of memory for a batch of " + std::to_string(X.rows) +
                               " rows and " + std::to_string(d) + " parameters (" + dtype() +
                               "): its workspaces could not grow; the model is unchanged");
    }
    next.n_samples_seen = out.counters.n_samples_seen;
    next.batch_count = out.counters.batch_count;
    next.previous_lambda = out.counters.previous_lambda;
    next.weight_sum = out.counters.weight_sum;
    if (!state_) next.feature_names = feature_names;
    for (const auto& slice : slices)
        if (next.converged_batches) *next.converged_batches += slice.converged ? 1 : 0;
    const rh::cpu::CpuUpdateDiagnostics& native = slices.back();
    Diagnostics diagnostics{native.iterations,
                            native.converged,
                            native.objective,
                            native.lambda_value,
                            native.bandwidth,
                            native.used_least_squares_fallback(),
                            rh::core::solve_route_name(native.solve_route),
                            rh::core::stop_reason_name(native.stop_reason)};
    // The commit: nothing above changed the regressor.
    state_ = std::move(next);
    diagnostics_ = std::move(diagnostics);
    return *this;
}

template <class T>
std::vector<T> Regressor<T>::predict(Matrix<T> X) const {
    const State<T>& s = state();
    check_X_shape(X, std::optional<std::int64_t>(s.n_features_in));
    if (!finite(X.data, X.rows * X.cols)) fail_non_finite_X();
    std::vector<T> out(static_cast<std::size_t>(X.rows));
    try {
        engine_->cpu.predict(s.coefficients.data(), s.n_features_in, s.fit_intercept, X.data, X.rows, out.data());
    } catch (const rh::core::EngineError& error) {
        rethrow(error);
    }
    return out;
}

template <class T>
bool Regressor<T>::is_fitted() const noexcept {
    return state_.has_value();
}

template <class T>
const Parameters& Regressor<T>::parameters() const noexcept {
    return parameters_;
}

template <class T>
const State<T>& Regressor<T>::state() const {
    if (!state_) throw NotFittedError("Call fit or partial_fit before using this estimator");
    return *state_;
}

template <class T>
const Diagnostics& Regressor<T>::diagnostics() const {
    if (!diagnostics_) throw NotFittedError("No batch has been processed");
    return *diagnostics_;
}

template <class T>
std::vector<T> Regressor<T>::coef() const {
    const State<T>& s = state();
    return {s.coefficients.begin(), s.coefficients.begin() + s.n_features_in};
}

template <class T>
double Regressor<T>::intercept() const {
    const State<T>& s = state();
    return s.fit_intercept ? static_cast<double>(s.coefficients[static_cast<std::size_t>(s.n_features_in)]) : 0.0;
}

template <class T>
void Regressor<T>::save(const std::string& path) const {
    detail::write_checkpoint(path, parameters_, state());
}

template <class T>
Regressor<T> Regressor<T>::load(const std::string& path, std::optional<std::string> backend) {
    detail::Checkpoint<T> checkpoint = detail::read_checkpoint<T>(path, backend ? &*backend : nullptr);
    Parameters& p = checkpoint.parameters;
    if (!backend && (p.backend == "numpy" || p.backend == "cupy" || p.backend == "torch" || p.backend == "tensorflow")) {
        // A Python-only backend's stream continues on the CPU engine (Python: load(path, backend="native_cpu")).
        p.backend = "native_cpu";
        p.device = "auto";
    }
    check_backend(p);
    Regressor regressor(std::move(p));
    regressor.state_ = std::move(checkpoint.state);
    return regressor;
}

template class Regressor<float>;
template class Regressor<double>;

}  // namespace renewable_huber

// Regressor<T>: the streaming Huber regression of the Python package's
// RenewableHuberRegressor, in C++ (float or double), on the C++ CPU engine:
// partial_fit absorbs one batch (partial_fit_batches several, in one call)
// and keeps d coefficients and d x d matrices;
// checkpoints are the Python package's files (format 3), so a stream begun
// here resumes in Python and the other way round, bit for bit on the same
// engine build. Every call that throws leaves the regressor as it was.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "renewable_huber/arrays.hpp"
#include "renewable_huber/errors.hpp"
#include "renewable_huber/inference.hpp"
#include "renewable_huber/parameters.hpp"
#include "renewable_huber/state.hpp"

namespace renewable_huber {

template <class T>
class Regressor {
public:
    explicit Regressor(Parameters parameters = {});
    ~Regressor();
    Regressor(Regressor&&) noexcept;
    Regressor& operator=(Regressor&&) noexcept;
    Regressor(const Regressor&) = delete;
    Regressor& operator=(const Regressor&) = delete;

    // Absorbs one batch (X: rows x features; y: rows; sample_weight: rows
    // frequency weights, or none). The first batch starts the stream and
    // records `feature_names` (empty: positional); later batches must give
    // the same names or none.
    Regressor& partial_fit(Matrix<T> X, Vector<T> y, Vector<T> sample_weight = {},
                           const std::vector<std::string>& feature_names = {});
    // Consecutive slices of `batch_size` rows of X (the last may be
    // shorter), each absorbed as partial_fit absorbs a batch: bit for bit
    // the loop of partial_fit over the slices, in one engine call. All
    // slices or none: a failure in any slice leaves the regressor as it was.
    Regressor& partial_fit_batches(Matrix<T> X, Vector<T> y, std::int64_t batch_size, Vector<T> sample_weight = {},
                                   const std::vector<std::string>& feature_names = {});
    // A new stream with one batch: the previous one stays if this one fails.
    Regressor& fit(Matrix<T> X, Vector<T> y, Vector<T> sample_weight = {},
                   const std::vector<std::string>& feature_names = {});
    // X coef + intercept, one value per row.
    std::vector<T> predict(Matrix<T> X) const;

    bool is_fitted() const noexcept;
    const Parameters& parameters() const noexcept;
    // The state (NotFittedError before the first batch or a load).
    const State<T>& state() const;
    // The last batch's diagnostics (NotFittedError: "No batch has been processed").
    const Diagnostics& diagnostics() const;
    std::vector<T> coef() const;  // the features' coefficients
    double intercept() const;     // 0 without an intercept
    // Standard errors, z, p-values and intervals from the state
    // (inference.hpp); ValidationError with penalty "l1", without a meat
    // (inference off, or a format 2 checkpoint) or a weight sum <= d.
    Inference inference() const;

    // The checkpoint file the Python package reads (format 3), written atomically.
    void save(const std::string& path) const;
    // A checkpoint of the Python package (formats 1-3), validated as it is in
    // Python; its arrays cast to T. `backend` replaces the stored one (the
    // Python-only backends, numpy, cupy, torch, tensorflow, are read as
    // "native_cpu" when none is given and they are not available here).
    static Regressor load(const std::string& path, std::optional<std::string> backend = std::nullopt);

    // The dtype's name: "float32" or "float64".
    static const char* dtype() noexcept;

    struct Engine;  // the engine behind the API (implementation detail)

private:
    Regressor& absorb(Matrix<T> X, Vector<T> y, Vector<T> sample_weight, const std::vector<std::string>& feature_names,
                      std::int64_t batch_size);

    Parameters parameters_;
    std::unique_ptr<Engine> engine_;
    std::optional<State<T>> state_;
    std::optional<Diagnostics> diagnostics_;
};

extern template class Regressor<float>;
extern template class Regressor<double>;

}  // namespace renewable_huber

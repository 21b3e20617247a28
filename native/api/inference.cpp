// Regressor<T>::inference (renewable_huber/inference.hpp): the sandwich
// covariance of the Python package's inference.py, step for step, in double.
#include "renewable_huber/inference.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <string>
#include <vector>

#include "cpu/platform/blas_provider.hpp"
#include "renewable_huber/errors.hpp"
#include "renewable_huber/regressor.hpp"

namespace renewable_huber {

namespace {

// A coordinate's share of J's null space above which it is not identified (inference.py's UNIDENTIFIED_SHARE).
constexpr double kUnidentifiedShare = 1e-6;
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

const char* const kL1Message =
    "inference is not available for penalty='l1': selection and shrinkage make these standard errors invalid; "
    "refit the selected columns (the nonzero coef_) with penalty='none' for inference";
const char* const kNotTrackedMessage =
    "this model was fitted with inference=False, so it did not accumulate what standard errors need; "
    "refit with inference=True";
const char* const kUnknownMeatMessage =
    "this stream's meat (what standard errors need beside the information matrix) is unknown: the stream was "
    "resumed from a format 2 checkpoint, written before inference existed; standard errors need a stream "
    "fitted from its first batch with inference=True";

// Q(x) = 1 - Phi(x), accurate in the upper tail.
double upper_tail(double x) { return 0.5 * std::erfc(x / std::sqrt(2.0)); }

// printf's %g, as Python's f"{value:g}" writes it.
std::string general(double value) {
    char text[32];
    std::snprintf(text, sizeof text, "%g", value);
    return text;
}

}  // namespace

double normal_quantile(double p) {
    if (!(p > 0.0 && p < 1.0)) return kNaN;
    if (p == 0.5) return 0.0;
    // The upper tail q = min(p, 1 - p) solved for x > 0: a start within
    // 4.5e-4 (Abramowitz and Stegun 26.2.23), then Newton on Q(x) = q.
    const double q = p < 0.5 ? p : 1.0 - p;
    const double t = std::sqrt(-2.0 * std::log(q));
    double x = t - (2.515517 + 0.802853 * t + 0.010328 * t * t) / (1.0 + 1.432788 * t + 0.189269 * t * t +
                                                                     0.001308 * t * t * t);
    const double inverse_root_two_pi = 1.0 / std::sqrt(2.0 * M_PI);
    for (int iteration = 0; iteration < 8; ++iteration) {
        const double density = inverse_root_two_pi * std::exp(-0.5 * x * x);
        const double change = (upper_tail(x) - q) / density;
        x += change;
        if (std::fabs(change) <= 1e-16 * std::fabs(x)) break;
    }
    return p < 0.5 ? -x : x;
}

std::vector<double> Inference::bse() const {
    std::vector<double> out(static_cast<std::size_t>(n_parameters));
    for (std::int64_t k = 0; k < n_parameters; ++k) out[k] = std::sqrt(cov[k * n_parameters + k]);
    return out;
}

std::vector<double> Inference::tvalues() const {
    std::vector<double> out = bse();
    for (std::size_t k = 0; k < out.size(); ++k) out[k] = params[k] / out[k];
    return out;
}

std::vector<double> Inference::pvalues() const {
    std::vector<double> out = tvalues();
    for (double& value : out) value = std::isfinite(value) ? std::erfc(std::fabs(value) / std::sqrt(2.0)) : kNaN;
    return out;
}

std::vector<std::pair<double, double>> Inference::conf_int(double alpha) const {
    if (!(alpha > 0.0 && alpha < 1.0)) throw ValidationError("alpha must be a number strictly between 0 and 1");
    const double quantile = normal_quantile(1.0 - alpha / 2.0);
    const std::vector<double> errors = bse();
    std::vector<std::pair<double, double>> out(errors.size());
    for (std::size_t k = 0; k < out.size(); ++k)
        out[k] = {params[k] - quantile * errors[k], params[k] + quantile * errors[k]};
    return out;
}

template <class T>
Inference Regressor<T>::inference() const {
    const State<T>& s = state();
    if (parameters_.penalty == "l1") throw ValidationError(kL1Message);
    if (!s.meat) throw ValidationError(parameters_.inference ? kUnknownMeatMessage : kNotTrackedMessage);
    const std::int64_t d = s.n_parameters();
    const double N = s.weight_sum;
    if (!(N > static_cast<double>(d)))
        throw ValidationError("inference needs a weight sum above the " + std::to_string(d) +
                              " parameters, and this stream's is " + general(N));
    const auto at = [d](std::int64_t i, std::int64_t j) { return static_cast<std::size_t>(i * d + j); };
    // J symmetrized, its eigendecomposition (row k of `vectors`: eigenvector k).
    std::vector<double> vectors(static_cast<std::size_t>(d * d)), eigenvalues(static_cast<std::size_t>(d));
    for (std::int64_t i = 0; i < d; ++i)
        for (std::int64_t j = 0; j < d; ++j)
            vectors[at(i, j)] = (static_cast<double>(s.information[at(i, j)]) +
                                 static_cast<double>(s.information[at(j, i)])) / 2.0;
    if (rh::cpu::blas::symmetric_eigen(static_cast<rh::cpu::blas::index_t>(d), vectors.data(), eigenvalues.data()) != 0)
        throw EngineError("the information matrix's eigendecomposition did not converge");
    double largest = 0.0;
    for (double value : eigenvalues) largest = std::max(largest, std::fabs(value));
    const double cutoff = static_cast<double>(std::numeric_limits<T>::epsilon()) * static_cast<double>(d) * largest;
    std::vector<bool> kept(static_cast<std::size_t>(d));
    std::int64_t rank = 0;
    for (std::int64_t k = 0; k < d; ++k) rank += (kept[k] = eigenvalues[k] > cutoff) ? 1 : 0;
    // J^+ = sum over kept k of v_k v_k' / lambda_k.
    std::vector<double> inverse(static_cast<std::size_t>(d * d), 0.0);
    for (std::int64_t k = 0; k < d; ++k) {
        if (!kept[k]) continue;
        const double* v = vectors.data() + k * d;
        for (std::int64_t i = 0; i < d; ++i)
            for (std::int64_t j = 0; j < d; ++j) inverse[at(i, j)] += v[i] * v[j] / eigenvalues[k];
    }
    // cov = N / (N - d) J^+ S J^+, symmetrized.
    std::vector<double> left(static_cast<std::size_t>(d * d), 0.0), cov(static_cast<std::size_t>(d * d), 0.0);
    for (std::int64_t i = 0; i < d; ++i)
        for (std::int64_t m = 0; m < d; ++m)
            for (std::int64_t j = 0; j < d; ++j)
                left[at(i, j)] += inverse[at(i, m)] * static_cast<double>((*s.meat)[at(m, j)]);
    const double scale = N / (N - static_cast<double>(d));
    for (std::int64_t i = 0; i < d; ++i)
        for (std::int64_t m = 0; m < d; ++m)
            for (std::int64_t j = 0; j < d; ++j) cov[at(i, j)] += left[at(i, m)] * inverse[at(m, j)];
    for (std::int64_t i = 0; i < d; ++i)
        for (std::int64_t j = i; j < d; ++j) {
            const double value = scale * (cov[at(i, j)] + cov[at(j, i)]) / 2.0;
            cov[at(i, j)] = cov[at(j, i)] = value;
        }
    if (rank < d) {  // directions J carries no information about: NaN, never a made-up number
        for (std::int64_t i = 0; i < d; ++i) {
            double null_share = 0.0;
            for (std::int64_t k = 0; k < d; ++k)
                if (!kept[k]) null_share += vectors[at(k, i)] * vectors[at(k, i)];
            if (null_share <= kUnidentifiedShare) continue;
            for (std::int64_t j = 0; j < d; ++j) cov[at(i, j)] = cov[at(j, i)] = kNaN;
        }
    }
    // The public order: the intercept (last in the state) first.
    const std::int64_t p = s.n_features_in;
    std::vector<std::int64_t> order;
    if (s.fit_intercept) order.push_back(p);
    for (std::int64_t j = 0; j < p; ++j) order.push_back(j);
    Inference out;
    if (s.fit_intercept) out.names.push_back("intercept");
    for (std::int64_t j = 0; j < p; ++j) {
        std::string name = "x";  // (appended, not "x" + ...: GCC 12's -Wrestrict misfires on that)
        name += std::to_string(j);
        out.names.push_back(s.feature_names.empty() ? name : s.feature_names[j]);
    }
    out.params.resize(static_cast<std::size_t>(d));
    out.cov.resize(static_cast<std::size_t>(d * d));
    for (std::int64_t a = 0; a < d; ++a) {
        out.params[a] = static_cast<double>(s.coefficients[order[a]]);
        for (std::int64_t b = 0; b < d; ++b) out.cov[at(a, b)] = cov[at(order[a], order[b])];
    }
    out.weight_sum = N;
    out.n_samples_seen = s.n_samples_seen;
    out.batch_count = s.batch_count;
    out.information_rank = rank;
    out.n_parameters = d;
    return out;
}

template Inference Regressor<float>::inference() const;
template Inference Regressor<double>::inference() const;

}  // namespace renewable_huber

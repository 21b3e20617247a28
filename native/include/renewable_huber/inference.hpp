// Inference for a streamed robust fit (amendment 0003; the Python package's
// inference.py, docs/inference.md): the sandwich covariance
//
//     cov = N / (N - d) J^+ S J^+      (J: the state's information, S: its meat, N: the weight sum)
//
// formed in double from the d x d state alone, with standard errors, z
// statistics, two-sided normal p-values and normal intervals. J^+ is J's
// inverse, or its pseudo-inverse when J is singular to working precision
// (eigenvalues at or below eps * d of the largest): then information_rank
// < n_parameters and every coefficient whose direction J carries no
// information about has NaN in its row and column of cov (and NaN
// statistics), never a made-up number. The public order lists the
// intercept first, then the features (the state keeps it last).
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace renewable_huber {

struct Inference {
    std::vector<std::string> names;  // "intercept" first (with one), then the features (x0, x1, ... if unnamed)
    std::vector<double> params;      // the coefficients
    std::vector<double> cov;         // d x d, row-major
    double weight_sum = 0.0;         // N
    std::int64_t n_samples_seen = 0;
    std::int64_t batch_count = 0;
    std::int64_t information_rank = 0;
    std::int64_t n_parameters = 0;

    bool singular() const noexcept { return information_rank < n_parameters; }
    std::vector<double> bse() const;      // sqrt(diag(cov))
    std::vector<double> tvalues() const;  // params / bse
    std::vector<double> pvalues() const;  // 2 (1 - Phi(|z|))
    // Normal (1 - alpha) intervals, one (low, high) per coefficient;
    // ValidationError unless 0 < alpha < 1.
    std::vector<std::pair<double, double>> conf_int(double alpha = 0.05) const;
};

// The standard normal quantile Phi^-1(p), 0 < p < 1 (to a few ulps).
double normal_quantile(double p);

}  // namespace renewable_huber

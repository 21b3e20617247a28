// The estimator's parameters (spec/API.md, "Constructor"), with the Python
// package's defaults, ranges and messages. The dtype is the Regressor's
// template argument.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace renewable_huber {

struct Parameters {
    double tau = 1.345;
    std::string penalty = "none";  // "none" or "l1"
    double lambda_scale = 1.0;
    double bandwidth_scale = 1.0;
    bool fit_intercept = true;
    std::int64_t max_iter = 100;
    double tol = 1e-6;
    double ridge = 1e-8;
    // "auto" or "native_cpu" (the C++ CPU engine; "numpy" is read as it too),
    // "native_cuda" where the library was built with CUDA.
    std::string backend = "auto";
    std::string device = "auto";  // "auto", "cpu", "cuda" or "cuda:N"
    std::optional<std::int64_t> n_jobs;  // nullopt: the library default; -1: every core
    bool cuda_graphs = false;
    bool cuda_fast_math = false;
    bool inference = true;  // accumulate what standard errors need (amendment 0003)

    // Throws ValidationError with the Python package's message for the first
    // bad value, in its order.
    void validate(const std::string& dtype) const;
};

}  // namespace renewable_huber

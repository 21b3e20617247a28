// Inference in the C++ library (renewable_huber/inference.hpp): the
// statistics the Python package's inference.py computes from the same
// checkpoints, its refusals, the normal quantile.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <utility>
#include <vector>

#include "api_test_support.hpp"
#include "json.hpp"
#include "renewable_huber/renewable_huber.hpp"

namespace rh = renewable_huber;
using namespace rh_api_test;
using rh::detail::Json;

// inference(): the statistics the Python package's inference.py computes
// from the same checkpoint (tests/fixtures/inference, written by
// scripts/inference/write_cpp_fixtures.py; tests/test_inference_fixtures.py
// keeps the JSON true to inference.py), a singular J's NaN included.
namespace {
void expect_close(double actual, const Json& expected, const std::string& what) {
    if (expected.is_null()) {
        EXPECT_TRUE(std::isnan(actual)) << what << " should be NaN, is " << actual;
        return;
    }
    const double value = number(expected);
    EXPECT_NEAR(actual, value, 1e-10 * (1.0 + std::fabs(value))) << what;
}
}  // namespace

TEST(CppApi, InferenceReproducesThePythonPackagesStatistics) {
    for (const std::string name : {"weighted_named", "singular_duplicate_column"}) {
        SCOPED_TRACE(name);
        const std::string base = kSource + "/tests/fixtures/inference/" + name;
        const auto model = rh::Regressor<double>::load(base + ".npz");
        const Json expected = rh::detail::parse_json(read_file(base + ".json"));
        const rh::Inference inference = model.inference();
        std::vector<std::string> names;
        for (const Json& n : *expected.find("names")->as_array()) names.push_back(*n.as_string());
        EXPECT_EQ(inference.names, names);
        EXPECT_EQ(inference.information_rank, static_cast<std::int64_t>(number(*expected.find("information_rank"))));
        EXPECT_EQ(inference.singular(), name == "singular_duplicate_column");
        const auto& cov = *expected.find("cov")->as_array();
        ASSERT_EQ(cov.size(), inference.cov.size());
        for (std::size_t k = 0; k < cov.size(); ++k) expect_close(inference.cov[k], cov[k], "cov " + std::to_string(k));
        const std::vector<std::pair<std::string, std::vector<double>>> vectors = {
            {"params", inference.params}, {"bse", inference.bse()}, {"tvalues", inference.tvalues()},
            {"pvalues", inference.pvalues()}};
        for (const auto& [key, values] : vectors) {
            const auto& want = *expected.find(key)->as_array();
            ASSERT_EQ(want.size(), values.size()) << key;
            for (std::size_t k = 0; k < want.size(); ++k) expect_close(values[k], want[k], key + " " + std::to_string(k));
        }
        for (const auto& [alpha, text] : {std::pair{0.05, "0.05"}, std::pair{0.1, "0.1"}}) {
            const auto intervals = inference.conf_int(alpha);
            const auto& want = *expected.find("conf_int")->find(text)->as_array();
            ASSERT_EQ(want.size(), intervals.size());
            for (std::size_t k = 0; k < want.size(); ++k) {
                expect_close(intervals[k].first, (*want[k].as_array())[0], std::string("low ") + text);
                expect_close(intervals[k].second, (*want[k].as_array())[1], std::string("high ") + text);
            }
        }
    }
}

TEST(CppApi, InferenceIsRefusedWhereItWouldBeInvalidOrUnknown) {
    std::vector<double> y;
    const auto X = linear(300, 3, 6, y);
    rh::Parameters l1;
    l1.penalty = "l1";
    rh::Regressor<double> lasso(l1);
    lasso.partial_fit(rh::matrix(X, 300, 3), rh::vector(y));
    expect_error<rh::ValidationError>(
        [&] { (void)lasso.inference(); },
        "inference is not available for penalty='l1': selection and shrinkage make these standard errors invalid; "
        "refit the selected columns (the nonzero coef_) with penalty='none' for inference");
    rh::Parameters off;
    off.inference = false;
    rh::Regressor<double> untracked(off);
    untracked.partial_fit(rh::matrix(X, 300, 3), rh::vector(y));
    expect_error<rh::ValidationError>([&] { (void)untracked.inference(); },
                                      "this model was fitted with inference=False, so it did not accumulate what "
                                      "standard errors need; refit with inference=True");
    const auto format2 = rh::Regressor<double>::load(kSource + "/tests/fuzz/corpus/checkpoint/f64_none.npz");
    expect_error<rh::ValidationError>(
        [&] { (void)format2.inference(); },
        "this stream's meat (what standard errors need beside the information matrix) is unknown: the stream was "
        "resumed from a format 2 checkpoint, written before inference existed; standard errors need a stream "
        "fitted from its first batch with inference=True");
    rh::Regressor<double> few;
    few.partial_fit(rh::matrix(X, 4, 3), rh::Vector<double>{y.data(), 4});
    expect_error<rh::ValidationError>([&] { (void)few.inference(); },
                                      "inference needs a weight sum above the 4 parameters, and this stream's is 4");
    expect_error<rh::NotFittedError>([] { (void)rh::Regressor<double>().inference(); },
                                     "Call fit or partial_fit before using this estimator");
    rh::Regressor<float> single;
    single.partial_fit(rh::matrix(std::vector<float>(X.begin(), X.end()), 300, 3),
                       rh::vector(std::vector<float>(y.begin(), y.end())));
    const rh::Inference stats = single.inference();
    EXPECT_EQ(stats.names, (std::vector<std::string>{"intercept", "x0", "x1", "x2"}));
    for (double e : stats.bse()) EXPECT_TRUE(std::isfinite(e) && e > 0.0);
    expect_error<rh::ValidationError>([&] { (void)stats.conf_int(1.0); },
                                      "alpha must be a number strictly between 0 and 1");
}

TEST(CppApi, TheNormalQuantileIsPythonsToAFewUlps) {
    // statistics.NormalDist().inv_cdf(p)
    const std::vector<std::pair<double, double>> cases = {
        {0.975, 1.9599639845400536}, {0.995, 2.5758293035489}, {0.5, 0.0},     {1e-10, -6.361340902404056},
        {0.8, 0.8416212335729144},   {1 - 1e-12, 7.0344869100478356},        {0.3, -0.5244005127080407}};
    for (const auto& [p, x] : cases) EXPECT_NEAR(rh::normal_quantile(p), x, 4e-15 * (1.0 + std::fabs(x))) << p;
    EXPECT_TRUE(std::isnan(rh::normal_quantile(0.0)));
    EXPECT_TRUE(std::isnan(rh::normal_quantile(1.0)));
}


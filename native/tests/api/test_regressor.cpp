// The C++ library's public API (native/include/renewable_huber): the golden
// corpus replayed through Regressor<T>, checkpoints written by Python read
// here and round trips, bad input and hostile checkpoints refused with the
// Python package's messages and the regressor as it was.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "json.hpp"
#include "npz.hpp"
#include "renewable_huber/renewable_huber.hpp"
#include "api_test_support.hpp"

namespace rh = renewable_huber;
using namespace rh_api_test;
using rh::detail::Json;
using rh::detail::JsonArray;

namespace {

template <class T>
std::vector<T> flat(const Json& v) {
    std::vector<T> out;
    for (const Json& item : *v.as_array()) {
        if (item.as_array() != nullptr) {
            for (const Json& inner : *item.as_array()) out.push_back(static_cast<T>(number(inner)));
        } else {
            out.push_back(static_cast<T>(number(item)));
        }
    }
    return out;
}

std::int64_t rows_of(const Json& matrix) { return static_cast<std::int64_t>(matrix.as_array()->size()); }
std::int64_t cols_of(const Json& matrix) { return static_cast<std::int64_t>((*matrix.as_array())[0].as_array()->size()); }

rh::Parameters parameters_of(const Json& config) {
    rh::Parameters p;
    p.tau = number(*config.find("tau"));
    p.penalty = *config.find("penalty")->as_string();
    p.lambda_scale = number(*config.find("lambda_scale"));
    p.bandwidth_scale = number(*config.find("bandwidth_scale"));
    p.fit_intercept = *config.find("fit_intercept")->as_bool();
    p.max_iter = static_cast<std::int64_t>(number(*config.find("max_iter")));
    p.tol = number(*config.find("tol"));
    p.ridge = number(*config.find("ridge"));
    p.backend = "native_cpu";
    p.device = "cpu";
    return p;
}

template <class T>
void expect_close(const std::vector<T>& got, const std::vector<double>& want, double rtol, double atol,
                  const std::string& where) {
    ASSERT_EQ(got.size(), want.size()) << where;
    for (std::size_t k = 0; k < got.size(); ++k)
        EXPECT_LE(std::abs(static_cast<double>(got[k]) - want[k]), atol + rtol * std::abs(want[k])) << where << " [" << k << "]";
}

template <class T>
void replay(const Json& c) {
    const std::string id = *c.find("id")->as_string();
    const double rtol = number(*c.find("rtol")), atol = number(*c.find("atol"));
    rh::Regressor<T> model(parameters_of(*c.find("config")));
    const JsonArray& batches = *c.find("batches")->as_array();
    const JsonArray& states = *c.find("expected")->find("states")->as_array();
    for (std::size_t b = 0; b < batches.size(); ++b) {
        const Json& batch = batches[b];
        const std::vector<T> X = flat<T>(*batch.find("X")), y = flat<T>(*batch.find("y"));
        std::vector<T> w;
        const Json* weights = batch.find("sample_weight");
        if (weights != nullptr && !weights->is_null()) w = flat<T>(*weights);
        model.partial_fit(rh::matrix(X, rows_of(*batch.find("X")), cols_of(*batch.find("X"))), rh::vector(y),
                          w.empty() ? rh::Vector<T>{} : rh::vector(w));
        const std::string where = id + " batch " + std::to_string(b + 1);
        const Json& want = states[b];
        const rh::State<T>& s = model.state();
        EXPECT_EQ(s.n_samples_seen, static_cast<std::int64_t>(number(*want.find("n_samples_seen")))) << where;
        EXPECT_EQ(s.batch_count, static_cast<std::int64_t>(number(*want.find("batch_count")))) << where;
        expect_close(s.coefficients, flat<double>(*want.find("coefficients")), rtol, atol, where + " coefficients");
        expect_close(s.information, flat<double>(*want.find("information")), rtol, atol, where + " information");
        EXPECT_NEAR(s.weight_sum, number(*want.find("weight_sum")), 1e-9 * number(*want.find("weight_sum"))) << where;
    }
    const Json& probe = *c.find("probe_X");
    const std::vector<T> P = flat<T>(probe);
    expect_close(model.predict(rh::matrix(P, rows_of(probe), cols_of(probe))),
                 flat<double>(*c.find("expected")->find("predictions")), rtol, atol, id + " predictions");
}

std::filesystem::path scratch(const std::string& name) {
    const auto folder = std::filesystem::temp_directory_path() / ("rh-api-" + std::to_string(::getpid()));
    std::filesystem::create_directories(folder);
    return folder / name;
}

// The scratch folder goes when the tests end.
class ScratchCleanup : public ::testing::Environment {
public:
    void TearDown() override {
        std::error_code ignored;
        std::filesystem::remove_all(scratch("x").parent_path(), ignored);
    }
};
const auto* const kCleanup = ::testing::AddGlobalTestEnvironment(new ScratchCleanup);

}  // namespace

TEST(CppApi, TheProjectGoldenCorpusReplays) {
    const Json corpus = rh::detail::parse_json(read_file(kSource + "/tests/golden/native_core_v1.json"));
    int replayed = 0;
    for (const Json& c : *corpus.find("cases")->as_array()) {
        SCOPED_TRACE(*c.find("id")->as_string());
        if (*c.find("config")->find("dtype")->as_string() == "float32") replay<float>(c);
        else replay<double>(c);
        ++replayed;
    }
    EXPECT_EQ(replayed, 17);
}

TEST(CppApi, CheckpointsWrittenByPythonLoadAndRoundTripBitForBit) {
    // The fuzz corpus's seeds: format 2 files the NumPy reference wrote.
    for (const char* name : {"f64_none.npz", "f32_l1.npz", "f64_names_weights.npz"}) {
        SCOPED_TRACE(name);
        const auto model = rh::Regressor<double>::load(kSource + "/tests/fuzz/corpus/checkpoint/" + name);
        const rh::State<double>& s = model.state();
        EXPECT_EQ(s.batch_count, 2);
        EXPECT_EQ(s.n_features_in, 3);
        EXPECT_FALSE(s.meat.has_value());           // format 2: unknown
        EXPECT_FALSE(s.converged_batches.has_value());
        EXPECT_EQ(model.parameters().backend, "native_cpu");  // a numpy stream goes on here
        const auto path = scratch(std::string("again_") + name).string();
        model.save(path);
        expect_same_state(rh::Regressor<double>::load(path).state(), s);
    }
    const auto named = rh::Regressor<double>::load(kSource + "/tests/fuzz/corpus/checkpoint/f64_names_weights.npz");
    EXPECT_EQ(named.state().feature_names, (std::vector<std::string>{"a", "b", "c"}));
    EXPECT_FALSE(named.state().fit_intercept);
}

TEST(CppApi, AStreamResumedFromItsCheckpointHasTheBitsOfOneThatNeverStopped) {
    std::vector<double> y1, y2, y3;
    const auto X1 = linear(300, 4, 1, y1), X2 = linear(300, 4, 2, y2), X3 = linear(300, 4, 3, y3);
    rh::Regressor<double> whole;
    for (auto* batch : {&X1, &X2, &X3}) {
        const auto& y = batch == &X1 ? y1 : batch == &X2 ? y2 : y3;
        whole.partial_fit(rh::matrix(*batch, 300, 4), rh::vector(y), {}, {"a", "b", "c", "d"});
    }
    rh::Regressor<double> first;
    first.partial_fit(rh::matrix(X1, 300, 4), rh::vector(y1), {}, {"a", "b", "c", "d"});
    first.partial_fit(rh::matrix(X2, 300, 4), rh::vector(y2));
    const auto path = scratch("middle.npz").string();
    first.save(path);
    auto resumed = rh::Regressor<double>::load(path);
    resumed.partial_fit(rh::matrix(X3, 300, 4), rh::vector(y3), {}, {"a", "b", "c", "d"});
    expect_same_state(resumed.state(), whole.state());
    ASSERT_TRUE(whole.state().meat.has_value());
    EXPECT_EQ(*whole.state().converged_batches, 3);
    // The archive is numpy's: exactly these arrays, the metadata a 0-d unicode array of JSON.
    const auto arrays = rh::detail::read_npz(path);
    std::vector<std::string> names;
    for (const auto& [name, array] : arrays) names.push_back(name);
    EXPECT_EQ(names, (std::vector<std::string>{"coefficients", "information", "meat", "metadata"}));
    const Json metadata = rh::detail::parse_json(rh::detail::npy_unicode_text(arrays.at("metadata")));
    EXPECT_EQ(number(*metadata.find("format_version")), 3);
    EXPECT_EQ(*metadata.find("config")->find("backend")->as_string(), "auto");
}

// partial_fit_batches: the loop of partial_fit over the slices, bit for bit,
// in one engine call; all slices or none.
TEST(CppApi, PartialFitBatchesIsTheLoopOfPartialFitAndAllOrNothing) {
    std::vector<double> y;
    const auto X = linear(1000, 4, 9, y);
    std::vector<double> w(1000);
    for (std::size_t i = 0; i < w.size(); ++i) w[i] = 0.25 + static_cast<double>(i % 7) * 0.3;
    for (const std::string penalty : {"none", "l1"}) {
        rh::Parameters p;
        p.penalty = penalty;
        rh::Regressor<double> looped(p), batched(p);
        for (std::int64_t start = 0; start < 1000; start += 300) {
            const std::int64_t rows = std::min<std::int64_t>(300, 1000 - start);
            looped.partial_fit(rh::Matrix<double>{X.data() + start * 4, rows, 4}, rh::Vector<double>{y.data() + start, rows},
                               rh::Vector<double>{w.data() + start, rows}, {"a", "b", "c", "d"});
        }
        batched.partial_fit_batches(rh::matrix(X, 1000, 4), rh::vector(y), 300, rh::vector(w), {"a", "b", "c", "d"});
        expect_same_state(batched.state(), looped.state());
        EXPECT_EQ(batched.state().batch_count, 4);
        EXPECT_EQ(*batched.state().converged_batches, *looped.state().converged_batches);
        EXPECT_EQ(batched.diagnostics().iterations, looped.diagnostics().iterations);
        EXPECT_EQ(batched.state().feature_names, looped.state().feature_names);
    }
    rh::Regressor<double> model;
    model.partial_fit(rh::matrix(X, 300, 4), rh::Vector<double>{y.data(), 300});
    const rh::State<double> before = model.state();
    auto zero_slice = w;
    std::fill(zero_slice.begin() + 600, zero_slice.begin() + 900, 0.0);
    expect_error<rh::ValidationError>(
        [&] { model.partial_fit_batches(rh::matrix(X, 1000, 4), rh::vector(y), 300, rh::vector(zero_slice)); },
        "sample_weight cannot be all zero (rows 600:900, batch 3 of 4 of batch_size 300)");
    expect_error<rh::ValidationError>([&] { model.partial_fit_batches(rh::matrix(X, 1000, 4), rh::vector(y), 0); },
                                      "batch_size must be a positive integer, got 0");
    std::vector<double> huge_X = X, huge_y = y;  // the third slice overflows after two were absorbed
    for (std::size_t i = 600 * 4; i < 900 * 4; ++i) huge_X[i] *= 1e300;
    for (std::size_t i = 600; i < 900; ++i) huge_y[i] *= 1e300;
    EXPECT_THROW(model.partial_fit_batches(rh::matrix(huge_X, 1000, 4), rh::vector(huge_y), 300),
                 rh::NumericalOverflowError);
    expect_same_state(model.state(), before);
    EXPECT_EQ(model.state().batch_count, 1);
}

TEST(CppApi, BadInputIsRefusedWithPythonsMessagesAndTheStateIntact) {
    std::vector<double> y;
    const auto X = linear(200, 3, 4, y);
    rh::Regressor<double> model;
    model.partial_fit(rh::matrix(X, 200, 3), rh::vector(y), {}, {"a", "b", "c"});
    const rh::State<double> before = model.state();
    auto nan_X = X;
    nan_X[17] = NAN;
    std::vector<double> negative(200, 1.0), zeros(200, 0.0);
    negative[3] = -1.0;
    using rh::ValidationError;
    expect_error<ValidationError>([&] { model.partial_fit(rh::matrix(nan_X, 200, 3), rh::vector(y)); },
                                  "X must not contain NaN or infinite values");
    expect_error<ValidationError>([&] { model.partial_fit(rh::matrix(X, 300, 2), rh::vector(y)); },
                                  "X has 2 features, but RenewableHuberRegressor is expecting 3 features as input");
    expect_error<ValidationError>([&] { model.partial_fit(rh::matrix(X, 199, 3), rh::vector(y)); },
                                  "X and y must contain the same number of samples");
    expect_error<ValidationError>(
        [&] { model.partial_fit(rh::matrix(X, 200, 3), rh::vector(y), rh::vector(negative)); },
        "sample_weight must be non-negative");
    expect_error<ValidationError>([&] { model.partial_fit(rh::matrix(X, 200, 3), rh::vector(y), rh::vector(zeros)); },
                                  "sample_weight cannot be all zero");
    expect_error<ValidationError>([&] { model.partial_fit(rh::matrix(X, 0, 3), rh::vector(y)); },
                                  "Found array with 0 sample(s) (shape=(0, 3)) while a minimum of 1 is required.");
    expect_error<ValidationError>(
        [&] { model.partial_fit(rh::matrix(X, 200, 3), rh::vector(y), {}, {"a", "B", "c"}); },
        "X feature names must match the names and order used during the first batch");
    std::vector<double> huge_X = X, huge_y = y;
    for (auto& v : huge_X) v *= 1e300;
    for (auto& v : huge_y) v *= 1e300;
    EXPECT_THROW(model.partial_fit(rh::matrix(huge_X, 200, 3), rh::vector(huge_y)), rh::NumericalOverflowError);
    // Bad in X and y: X is named first, as Python names it.
    const std::vector<double> short_y(y.begin(), y.begin() + 150);
    expect_error<ValidationError>([&] { model.partial_fit(rh::matrix(nan_X, 200, 3), rh::vector(short_y)); },
                                  "X must not contain NaN or infinite values");
    expect_error<ValidationError>([&] { model.partial_fit(rh::matrix(X, 200, 0), rh::vector(y)); },
                                  "0 feature(s) (shape=(200, 0)) while a minimum of 1 is required.");
    expect_error<ValidationError>([&] { (void)model.predict(rh::matrix(X, 200, 0)); },
                                  "0 feature(s) (shape=(200, 0)) while a minimum of 1 is required.");
    expect_error<ValidationError>([&] { (void)model.predict(rh::matrix(nan_X, 200, 3)); },
                                  "X must not contain NaN or infinite values");
    const int iterations_before = model.diagnostics().iterations;
    expect_error<ValidationError>([&] { model.fit(rh::matrix(nan_X, 200, 3), rh::vector(y)); },
                                  "X must not contain NaN or infinite values");
    expect_same_state(model.state(), before);
    EXPECT_EQ(model.diagnostics().iterations, iterations_before);
    rh::Parameters bad;
    bad.tau = -1;
    expect_error<ValidationError>([&] { rh::Regressor<double>(bad).partial_fit(rh::matrix(X, 200, 3), rh::vector(y)); },
                                  "tau must be greater than zero");
    expect_error<rh::NotFittedError>([] { rh::Regressor<float>().state(); },
                                     "Call fit or partial_fit before using this estimator");
    // the regressor goes on as if nothing happened
    model.partial_fit(rh::matrix(X, 200, 3), rh::vector(y));
    EXPECT_EQ(model.state().batch_count, 2);
    // fit starts a new stream (on the same engine): the bits of a new regressor's fit
    model.fit(rh::matrix(X, 200, 3), rh::vector(y));
    rh::Regressor<double> fresh;
    fresh.fit(rh::matrix(X, 200, 3), rh::vector(y));
    expect_same_state(model.state(), fresh.state());
    EXPECT_EQ(model.state().batch_count, 1);
    EXPECT_TRUE(model.state().feature_names.empty());
}

TEST(CppApi, HostileCheckpointsAreRefusedByName) {
    std::vector<double> y;
    const auto X = linear(100, 2, 5, y);
    rh::Regressor<double> model;
    model.partial_fit(rh::matrix(X, 100, 2), rh::vector(y));
    const auto path = scratch("base.npz").string();
    model.save(path);
    auto with_metadata = [&](const std::string& name, auto&& change) {
        auto arrays = rh::detail::read_npz(path);
        Json metadata = rh::detail::parse_json(rh::detail::npy_unicode_text(arrays.at("metadata")));
        change(metadata);
        std::vector<std::pair<std::string, rh::detail::NpyArray>> out;
        for (auto& [key, array] : arrays)
            out.emplace_back(key, key == "metadata" ? rh::detail::npy_unicode_scalar(rh::detail::write_json(metadata))
                                                    : array);
        const auto target = scratch(name).string();
        rh::detail::write_npz(target, out);
        return target;
    };
    auto set = [](const std::string& key, Json value) {
        return [key, value](Json& metadata) {
            auto& object = const_cast<rh::detail::JsonObject&>(*metadata.as_object());
            for (auto& member : object)
                if (member.first == key) member.second = value;
        };
    };
    auto big = Json{rh::detail::JsonNumber{"1180591620717411303424", true}};
    expect_error<rh::ValidationError>([&] { rh::Regressor<double>::load(with_metadata("v4.npz", set("format_version", Json::integer(4)))); },
                                      "Unsupported renewable-huber checkpoint format");
    expect_error<rh::ValidationError>([&] { rh::Regressor<double>::load(with_metadata("big.npz", set("batch_count", big))); },
                                      "state batch_count must be at most 9223372036854775807 (a signed 64-bit counter)");
    expect_error<rh::ValidationError>(
        [&] { rh::Regressor<double>::load(with_metadata("lambda.npz", set("previous_lambda", Json::real(-1.0)))); },
        "state previous lambda must be finite and non-negative");
    expect_error<rh::ValidationError>(
        [&] { rh::Regressor<double>::load(with_metadata("type.npz", set("n_samples_seen", Json::string("1")))); },
        "Invalid or corrupted renewable-huber checkpoint");
    expect_error<rh::ValidationError>([&] {
        rh::Regressor<double>::load(with_metadata("config.npz", [](Json& m) {
            auto& config = const_cast<rh::detail::JsonObject&>(*m.find("config")->as_object());
            for (auto& member : config)
                if (member.first == "tau") member.second = Json::string("x");
        }));
    }, "tau must be greater than zero");
    std::ofstream(scratch("garbage.npz")) << "not a zip";
    expect_error<rh::ValidationError>([&] { rh::Regressor<double>::load(scratch("garbage.npz").string()); },
                                      "Invalid or corrupted renewable-huber checkpoint");
    expect_error<rh::CheckpointFileError>([&] { rh::Regressor<double>::load("/nonexistent/model.npz"); },
                                          "No such checkpoint: '/nonexistent/model.npz'");
    // A counter the next batch would carry past int64: refused by the engine, the state intact.
    const auto edge = rh::Regressor<double>::load(
        with_metadata("edge.npz", set("n_samples_seen", Json::integer(std::numeric_limits<std::int64_t>::max() - 5))));
    auto resumed = rh::Regressor<double>::load(edge.state().n_samples_seen > 0 ? scratch("edge.npz").string() : path);
    expect_error<rh::ValidationError>([&] { resumed.partial_fit(rh::matrix(X, 100, 2), rh::vector(y)); },
                                      "state counters would overflow: n_samples_seen + 100 rows exceeds 9223372036854775807");
}

TEST(CppApi, JsonReadsWhatPythonWritesAndWritesFloatsThatRoundTrip) {
    const Json v = rh::detail::parse_json(R"({"a": [1, -2.5e-3, 1e400, null, true], "s": "x\u00e9\ud83d\ude00\n"})");
    EXPECT_EQ(*v.find("s")->as_string(), "x\xc3\xa9\xf0\x9f\x98\x80\n");
    EXPECT_EQ(rh::detail::write_json(*v.find("s")), R"("x\u00e9\ud83d\ude00\n")");
    EXPECT_TRUE(std::isinf(number((*v.find("a")->as_array())[2])));
    for (const double x : {0.1, 1.345, 1e-8, 2.0 / 3.0, 123456789012345680.0, 5e-324}) {
        const std::string text = rh::detail::write_json(Json::real(x));
        EXPECT_EQ(number(rh::detail::parse_json(text)), x) << text;
    }
    EXPECT_THROW(rh::detail::parse_json("{\"a\": }"), std::invalid_argument);
    EXPECT_THROW(rh::detail::parse_json("[1, 2"), std::invalid_argument);
}

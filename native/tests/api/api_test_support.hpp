// What the C++ API's test files share: the repository root, files and JSON
// numbers, a contaminated linear batch, the regressor's state compared bit
// for bit, an error expected with Python's message.
#pragma once

#include <gtest/gtest.h>

#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "json.hpp"
#include "renewable_huber/renewable_huber.hpp"

namespace rh_api_test {

namespace rh = renewable_huber;
using rh::detail::Json;

inline const std::string kSource = RH_TEST_SOURCE_DIR;  // the repository root

inline std::string read_file(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

inline double number(const Json& v) { return *rh::detail::json_double(*v.as_number()); }

inline std::vector<double> linear(int rows, int cols, unsigned seed, std::vector<double>& y) {
    std::mt19937 gen(seed);
    std::normal_distribution<double> normal;
    std::vector<double> X(static_cast<std::size_t>(rows * cols));
    y.assign(static_cast<std::size_t>(rows), 0.3);
    for (int i = 0; i < rows; ++i) {
        for (int j = 0; j < cols; ++j) {
            X[i * cols + j] = normal(gen);
            y[i] += X[i * cols + j] * (1.0 - 0.5 * j);
        }
        y[i] += normal(gen) + (i % 37 == 0 ? 40.0 : 0.0);
    }
    return X;
}

template <class T>
void expect_same_state(const rh::State<T>& a, const rh::State<T>& b) {
    EXPECT_EQ(a.coefficients, b.coefficients);
    EXPECT_EQ(a.information, b.information);
    EXPECT_EQ(a.meat.has_value(), b.meat.has_value());
    if (a.meat && b.meat) EXPECT_EQ(*a.meat, *b.meat);
    EXPECT_EQ(a.n_samples_seen, b.n_samples_seen);
    EXPECT_EQ(a.batch_count, b.batch_count);
    EXPECT_EQ(a.previous_lambda, b.previous_lambda);
    EXPECT_EQ(a.weight_sum, b.weight_sum);
    EXPECT_EQ(a.feature_names, b.feature_names);
    EXPECT_EQ(a.converged_batches, b.converged_batches);
}

template <class E, class F>
void expect_error(F&& call, const std::string& message) {
    try {
        call();
        ADD_FAILURE() << "no error; expected: " << message;
    } catch (const E& error) {
        EXPECT_EQ(std::string(error.what()), message);
    }
}

}  // namespace rh_api_test

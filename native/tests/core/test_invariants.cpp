#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

#include "core/invariants.hpp"

using namespace rh::core;

namespace {
Status status_of(auto&& call) {
    try {
        call();
    } catch (const EngineError& error) {
        return error.status();
    }
    return Status::ok;
}
}  // namespace

TEST(Invariants, ConfigRejectsEachBadValue) {
    SolverConfig good;
    EXPECT_EQ(status_of([&] { check_config(good); }), Status::ok);
    for (auto mutate : std::vector<void (*)(SolverConfig&)>{
             [](SolverConfig& c) { c.tau = 0; }, [](SolverConfig& c) { c.tau = NAN; },
             [](SolverConfig& c) { c.lambda_scale = -1; }, [](SolverConfig& c) { c.bandwidth_scale = 0; },
             [](SolverConfig& c) { c.max_iter = 0; }, [](SolverConfig& c) { c.tol = 0; },
             [](SolverConfig& c) { c.ridge = -1e-3; }}) {
        SolverConfig bad;
        mutate(bad);
        EXPECT_EQ(status_of([&] { check_config(bad); }), Status::invalid_argument);
    }
}

TEST(Invariants, CountersMustBeConsistent) {
    StateCounters counters{3, true, 0, 0, 0.0, 0.0};
    EXPECT_EQ(status_of([&] { check_counters(counters); }), Status::ok);
    counters.n_samples_seen = 10;  // samples seen but no weight
    EXPECT_EQ(status_of([&] { check_counters(counters); }), Status::invalid_state);
    counters.weight_sum = 10;
    counters.previous_lambda = -1;
    EXPECT_EQ(status_of([&] { check_counters(counters); }), Status::invalid_state);
    counters.previous_lambda = 0;
    counters.batch_count = -1;
    EXPECT_EQ(status_of([&] { check_counters(counters); }), Status::invalid_state);
}

TEST(Invariants, BatchShapeMustMatchTheState) {
    StateCounters counters{3, true, 0, 0, 0.0, 0.0};
    EXPECT_EQ(status_of([&] { check_batch_shape(5, 3, counters); }), Status::ok);
    EXPECT_EQ(status_of([&] { check_batch_shape(0, 3, counters); }), Status::invalid_argument);
    EXPECT_EQ(status_of([&] { check_batch_shape(5, 4, counters); }), Status::invalid_argument);
}

// A checkpoint can start a stream next to the counters' largest value; the
// batch that would pass it is refused (it wrapped to a negative count).
TEST(Invariants, ABatchThatWouldOverflowACounterIsRefused) {
    constexpr std::int64_t largest = std::numeric_limits<std::int64_t>::max();
    StateCounters counters{3, true, largest - 10, 5, 0.0, 1.0};
    EXPECT_EQ(status_of([&] { check_batch_shape(10, 3, counters); }), Status::ok);
    EXPECT_EQ(status_of([&] { check_batch_shape(11, 3, counters); }), Status::invalid_state);
    counters.n_samples_seen = 0;
    counters.batch_count = largest - 1;
    EXPECT_EQ(status_of([&] { check_room_for_batch(1, counters); }), Status::ok);
    counters.batch_count = largest;
    try {
        check_room_for_batch(1, counters);
        FAIL() << "batch_count at its largest value";
    } catch (const EngineError& error) {
        EXPECT_STREQ(error.what(), "state counters would overflow: batch_count + 1 exceeds 9223372036854775807");
    }
}

TEST(Invariants, NonFiniteAndNegativeInputsAreRejected) {
    std::vector<double> X{1, 2, 3, 4}, y{1, 2}, w{1, 1};
    BatchView<double> batch{X.data(), y.data(), w.data(), 2, 2};
    EXPECT_EQ(status_of([&] { check_batch_values(batch); }), Status::ok);
    X[3] = std::numeric_limits<double>::infinity();
    EXPECT_EQ(status_of([&] { check_batch_values(batch); }), Status::non_finite_input);
    X[3] = 4;
    y[0] = NAN;
    EXPECT_EQ(status_of([&] { check_batch_values(batch); }), Status::non_finite_input);
    y[0] = 1;
    w[1] = -1;
    EXPECT_EQ(status_of([&] { check_batch_values(batch); }), Status::invalid_weights);
    w = {0, 0};
    EXPECT_EQ(status_of([&] { check_batch_values(batch); }), Status::invalid_weights);
}

TEST(Invariants, AllFiniteSeesEveryElement) {
    std::vector<float> values(37, 1.0f);
    EXPECT_TRUE(all_finite(values.data(), 37));
    values[36] = NAN;
    EXPECT_FALSE(all_finite(values.data(), 37));
    values[36] = -std::numeric_limits<float>::infinity();
    EXPECT_FALSE(all_finite(values.data(), 37));
}

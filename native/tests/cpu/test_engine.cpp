#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "core/status.hpp"
#include "cpu/engine.hpp"
#include "test_fixtures.hpp"

using namespace rh;
using rh::test::Batch;
using rh::test::linear_batch;
using rh::test::OwnedState;
using rh::test::update_into;

namespace {
template <class T>
core::Status status_of(auto&& call) {
    try {
        call();
    } catch (const core::EngineError& error) {
        return error.status();
    }
    return core::Status::ok;
}

constexpr double kSentinel = -12345.0;

template <class T>
OwnedState<T> sentinel_state(std::int64_t features) {
    OwnedState<T> state(features, true);
    for (auto& v : state.coefficients) v = T(kSentinel);
    for (auto& v : state.information) v = T(kSentinel);
    return state;
}

template <class T>
bool untouched(const OwnedState<T>& state) {
    for (auto v : state.coefficients)
        if (v != T(kSentinel)) return false;
    for (auto v : state.information)
        if (v != T(kSentinel)) return false;
    return true;
}
}  // namespace

template <class T>
class EngineTest : public ::testing::Test {};
using Dtypes = ::testing::Types<float, double>;
TYPED_TEST_SUITE(EngineTest, Dtypes);

TYPED_TEST(EngineTest, RecoversTheLinearModelAndUpdatesCounters) {
    using T = TypeParam;
    cpu::Engine<T> engine(1);
    const auto batch = linear_batch<T>(400, 3);
    OwnedState<T> empty(3, true), next(3, true);
    const auto diagnostics = update_into(engine, empty, batch, core::SolverConfig{}, next);
    EXPECT_TRUE(diagnostics.converged);
    EXPECT_GE(diagnostics.iterations, 1);
    for (int j = 0; j < 3; ++j) EXPECT_NEAR(next.coefficients[j], (j + 1) * 0.25, 0.05);
    EXPECT_NEAR(next.coefficients[3], 0.5, 0.15);  // one-sided outliers bias the intercept a little
    EXPECT_EQ(next.counters.n_samples_seen, 400);
    EXPECT_EQ(next.counters.batch_count, 1);
    EXPECT_EQ(next.counters.weight_sum, 400.0);
    EXPECT_EQ(diagnostics.solve_route, core::SolveRoute::lu);
    // The information matrix is symmetric and its intercept entry counts the rows with curvature.
    const std::int64_t d = 4;
    for (int i = 0; i < d; ++i)
        for (int j = 0; j < d; ++j) EXPECT_EQ(next.information[i * d + j], next.information[j * d + i]);
    EXPECT_GT(next.information[d * d - 1], T(300));
    EXPECT_LE(next.information[d * d - 1], T(400));
}

TYPED_TEST(EngineTest, L1PenaltyUsesLammAndTheHistoricalSubgradient) {
    using T = TypeParam;
    cpu::Engine<T> engine;
    core::SolverConfig config;
    config.penalty = core::Penalty::l1;
    OwnedState<T> empty(3, true), first(3, true), second(3, true);
    const auto d1 = update_into(engine, empty, linear_batch<T>(300, 3, 1), config, first);
    const auto d2 = update_into(engine, first, linear_batch<T>(300, 3, 2), config, second);
    EXPECT_GT(d1.lambda_value, 0.0);
    EXPECT_LT(d2.lambda_value, d1.lambda_value);  // lambda shrinks with N
    EXPECT_EQ(second.counters.previous_lambda, d2.lambda_value);
    EXPECT_EQ(d1.solve_route, core::SolveRoute::none);  // LAMM solves no linear system
    EXPECT_NEAR(second.coefficients[2], 0.75, 0.1);
}

TYPED_TEST(EngineTest, BadShapesAreRejectedBeforeAnyWrite) {
    using T = TypeParam;
    cpu::Engine<T> engine;
    OwnedState<T> empty(3, true);
    auto next = sentinel_state<T>(3);
    const auto wrong_features = linear_batch<T>(10, 4);
    EXPECT_EQ(status_of<T>([&] { update_into(engine, empty, wrong_features, core::SolverConfig{}, next); }),
              core::Status::invalid_argument);
    Batch<T> no_rows{0, 3, {}, {}};
    no_rows.X.resize(1);
    no_rows.y.resize(1);
    EXPECT_EQ(status_of<T>([&] { update_into(engine, empty, no_rows, core::SolverConfig{}, next); }),
              core::Status::invalid_argument);
    EXPECT_TRUE(untouched(next));
}

TYPED_TEST(EngineTest, NonFiniteInputIsRejectedBeforeAnyWrite) {
    using T = TypeParam;
    cpu::Engine<T> engine;
    OwnedState<T> empty(3, true);
    auto next = sentinel_state<T>(3);
    auto batch = linear_batch<T>(50, 3);
    batch.X[77] = std::numeric_limits<T>::quiet_NaN();
    EXPECT_EQ(status_of<T>([&] { update_into(engine, empty, batch, core::SolverConfig{}, next); }),
              core::Status::non_finite_input);
    batch = linear_batch<T>(50, 3);
    batch.y[49] = std::numeric_limits<T>::infinity();
    EXPECT_EQ(status_of<T>([&] { update_into(engine, empty, batch, core::SolverConfig{}, next); }),
              core::Status::non_finite_input);
    EXPECT_TRUE(untouched(next));
}

// The test of X split over two threads (rows_finite, and update()'s own
// test while it builds the panels) finds a non-finite value in either
// thread's rows, at their edges included, and update() rejects it.
TYPED_TEST(EngineTest, NonFiniteRowsAreFoundInEveryThreadsPart) {
    using T = TypeParam;
    cpu::Engine<T> engine(2);
    const std::int64_t rows = 40000, features = 4;
    OwnedState<T> empty(features, true);
    auto next = sentinel_state<T>(features);
    auto batch = linear_batch<T>(rows, features);
    ASSERT_TRUE(engine.rows_finite(batch.X.data(), rows, features));
    // update() takes the narrow fast path here, whose panel build tests X
    // (Engine::scan_rows); rows_finite is the plain test.
    EXPECT_EQ(update_into(engine, empty, batch, core::SolverConfig{}, next).kernel_path, cpu::KernelPath::fast);
    next = sentinel_state<T>(features);
    for (std::int64_t row : {std::int64_t{0}, rows / 2 - 1, rows / 2, rows / 2 + 7, rows - 1}) {
        for (T bad : {std::numeric_limits<T>::quiet_NaN(), -std::numeric_limits<T>::infinity()}) {
            auto broken = batch;
            broken.X[row * features + features - 1] = bad;
            EXPECT_FALSE(engine.rows_finite(broken.X.data(), rows, features)) << "row " << row;
            EXPECT_EQ(status_of<T>([&] { update_into(engine, empty, broken, core::SolverConfig{}, next); }),
                      core::Status::non_finite_input)
                << "row " << row;
        }
    }
    EXPECT_TRUE(untouched(next));
    EXPECT_EQ(engine.started_workers(), 1);  // the test really was split
}

TYPED_TEST(EngineTest, InvalidStateIsRejectedBeforeAnyWrite) {
    using T = TypeParam;
    cpu::Engine<T> engine;
    OwnedState<T> bad(3, true);
    bad.coefficients[1] = std::numeric_limits<T>::infinity();
    auto next = sentinel_state<T>(3);
    EXPECT_EQ(status_of<T>([&] { update_into(engine, bad, linear_batch<T>(20, 3), core::SolverConfig{}, next); }),
              core::Status::invalid_state);
    OwnedState<T> inconsistent(3, true);
    inconsistent.counters.n_samples_seen = 5;  // but weight_sum 0
    EXPECT_EQ(status_of<T>([&] {
                  update_into(engine, inconsistent, linear_batch<T>(20, 3), core::SolverConfig{}, next);
              }),
              core::Status::invalid_state);
    EXPECT_TRUE(untouched(next));
}

TEST(Engine, SingularSystemTakesTheLeastSquaresRoute) {
    // Duplicated columns, tau large (quadratic zone), ridge 0: Z'Z is singular.
    cpu::Engine<double> engine;
    Batch<double> batch = linear_batch<double>(30, 3);
    for (std::int64_t i = 0; i < 30; ++i) batch.X[i * 3 + 2] = batch.X[i * 3 + 1];
    core::SolverConfig config;
    config.tau = 100.0;
    config.ridge = 0.0;
    OwnedState<double> empty(3, true), next(3, true);
    const auto diagnostics = update_into(engine, empty, batch, config, next);
    EXPECT_TRUE(diagnostics.used_least_squares_fallback());
    EXPECT_EQ(diagnostics.solve_route, core::SolveRoute::least_squares);
    // Minimum norm: the duplicated columns share their weight equally.
    EXPECT_NEAR(next.coefficients[1], next.coefficients[2], 1e-8);
}

TEST(Engine, SampleWeightsActLikeRepeatedRows) {
    cpu::Engine<double> engine;
    auto batch = linear_batch<double>(60, 2);
    std::vector<double> weights(60, 1.0);
    weights[5] = 2.0;
    Batch<double> repeated = batch;
    repeated.rows = 61;
    repeated.X.insert(repeated.X.end(), batch.X.begin() + 10, batch.X.begin() + 12);
    repeated.y.push_back(batch.y[5]);
    core::SolverConfig config;
    config.tol = 1e-12;
    OwnedState<double> empty(2, true), weighted(2, true), duplicated(2, true);
    auto output = weighted.output();
    core::BatchView<double> view{batch.X.data(), batch.y.data(), weights.data(), 60, 2};
    engine.update(empty.view(), view, config, output);
    update_into(engine, empty, repeated, config, duplicated);
    for (int j = 0; j < 3; ++j) EXPECT_NEAR(weighted.coefficients[j], duplicated.coefficients[j], 1e-9);
    EXPECT_EQ(output.counters.weight_sum, 61.0);
}

TEST(Engine, PredictAddsTheIntercept) {
    cpu::Engine<double> engine;
    std::vector<double> coefficients{1.0, -2.0, 0.5}, X{1, 1, 2, 0, 0, 3}, out(3);
    engine.predict(coefficients.data(), 2, true, X.data(), 3, out.data());
    EXPECT_DOUBLE_EQ(out[0], -0.5);
    EXPECT_DOUBLE_EQ(out[1], 2.5);
    EXPECT_DOUBLE_EQ(out[2], -5.5);
}

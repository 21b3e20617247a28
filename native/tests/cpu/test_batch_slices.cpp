// update_slices (cpu/batch_slices.hpp): consecutive slices of one batch in
// one call give, bit for bit, what the loop of update() over the slices
// gives (both penalties, both dtypes, the meat, a short last slice, both
// kernel paths); a failure in a later slice leaves the caller's state as it
// was; a slice size below one is refused.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "core/status.hpp"
#include "cpu/batch_slices.hpp"
#include "test_fixtures.hpp"

using namespace rh;
using rh::test::Batch;
using rh::test::linear_batch;
using rh::test::OwnedState;

namespace {

template <class T>
Batch<T> rows_of(const Batch<T>& batch, std::int64_t start, std::int64_t stop) {
    Batch<T> slice{stop - start, batch.features, {}, {}};
    slice.X.assign(batch.X.begin() + start * batch.features, batch.X.begin() + stop * batch.features);
    slice.y.assign(batch.y.begin() + start, batch.y.begin() + stop);
    return slice;
}

core::SolverConfig config_for(core::Penalty penalty) {
    core::SolverConfig config;
    config.penalty = penalty;
    config.max_iter = 200;
    config.tol = 1e-8;
    return config;
}

}  // namespace

template <class T>
class BatchSlices : public ::testing::Test {};
using Dtypes = ::testing::Types<float, double>;
TYPED_TEST_SUITE(BatchSlices, Dtypes);

TYPED_TEST(BatchSlices, EqualTheLoopOfUpdatesBitForBit) {
    using T = TypeParam;
    for (const auto kernel : {cpu::KernelChoice::reference_order, cpu::KernelChoice::fast})
        for (const auto penalty : {core::Penalty::none, core::Penalty::l1})
            for (const std::int64_t slice_rows : {1000, 700, 2500}) {  // even, a short last slice, one slice
                const bool meat = penalty == core::Penalty::none;
                const auto config = config_for(penalty);
                const Batch<T> batch = linear_batch<T>(2500, 6, 11);
                cpu::Engine<T> looped(2, kernel), sliced(2, kernel);

                OwnedState<T> state(6, true, meat);
                std::vector<cpu::CpuUpdateDiagnostics> loop;
                for (std::int64_t start = 0; start < batch.rows; start += slice_rows) {
                    const Batch<T> slice = rows_of(batch, start, std::min(start + slice_rows, batch.rows));
                    OwnedState<T> next(6, true, meat);
                    loop.push_back(rh::test::update_into(looped, state, slice, config, next));
                    state = next;
                }

                const OwnedState<T> start(6, true, meat);
                const OwnedState<T> untouched = start;
                OwnedState<T> next(6, true, meat);
                auto output = next.output();
                const auto slices = cpu::update_slices(sliced, start.view(), batch.view(), slice_rows, config, output);
                next.counters = output.counters;

                const std::string where = "kernel " + std::to_string(static_cast<int>(kernel)) + " penalty " +
                                          std::to_string(static_cast<int>(penalty)) + " slice " +
                                          std::to_string(slice_rows);
                ASSERT_EQ(slices.size(), loop.size()) << where;
                EXPECT_EQ(next.coefficients, state.coefficients) << where;
                EXPECT_EQ(next.information, state.information) << where;
                EXPECT_EQ(next.meat, state.meat) << where;
                EXPECT_EQ(next.counters.batch_count, state.counters.batch_count) << where;
                EXPECT_EQ(next.counters.n_samples_seen, 2500) << where;
                EXPECT_EQ(next.counters.weight_sum, state.counters.weight_sum) << where;
                EXPECT_EQ(next.counters.previous_lambda, state.counters.previous_lambda) << where;
                for (std::size_t k = 0; k < loop.size(); ++k) {
                    EXPECT_EQ(slices[k].iterations, loop[k].iterations) << where << " slice " << k;
                    EXPECT_EQ(slices[k].objective, loop[k].objective) << where << " slice " << k;
                }
                EXPECT_EQ(start.coefficients, untouched.coefficients);  // the input state is never written
                EXPECT_EQ(start.information, untouched.information);
            }
}

TYPED_TEST(BatchSlices, AFailingLaterSliceLeavesTheCallersStateAsItWas) {
    using T = TypeParam;
    Batch<T> batch = linear_batch<T>(300, 3, 5);
    batch.y[250] = std::numeric_limits<T>::quiet_NaN();  // the third slice of 100 rows fails its checks
    OwnedState<T> state(3, true, true);
    state.coefficients = {T(0.5), T(-1), T(2), T(0.25)};
    state.information.assign(16, T(0));
    for (int j = 0; j < 4; ++j) state.information[j * 5] = T(10);
    state.meat = state.information;
    state.counters.n_samples_seen = 10;
    state.counters.batch_count = 1;
    state.counters.weight_sum = 10.0;
    const OwnedState<T> before = state;
    OwnedState<T> next(3, true, true);
    auto output = next.output();
    cpu::Engine<T> engine(1);
    EXPECT_THROW(cpu::update_slices(engine, state.view(), batch.view(), 100, config_for(core::Penalty::none), output),
                 core::EngineError);
    EXPECT_EQ(state.coefficients, before.coefficients);
    EXPECT_EQ(state.information, before.information);
    EXPECT_EQ(state.meat, before.meat);
}

TEST(BatchSlicesArguments, ASliceSizeBelowOneIsRefusedByName) {
    const Batch<double> batch = linear_batch<double>(10, 2, 1);
    const OwnedState<double> state(2, true);
    OwnedState<double> next(2, true);
    auto output = next.output();
    cpu::Engine<double> engine(1);
    try {
        cpu::update_slices(engine, state.view(), batch.view(), 0, config_for(core::Penalty::none), output);
        FAIL() << "a batch size of 0 was accepted";
    } catch (const core::EngineError& error) {
        EXPECT_EQ(error.status(), core::Status::invalid_argument);
        EXPECT_NE(std::string(error.what()).find("batch_size must be a positive integer, got 0"), std::string::npos);
    }
    EXPECT_EQ(cpu::slice_count(10, 3), 4);
    EXPECT_EQ(cpu::slice_count(9, 3), 3);
}

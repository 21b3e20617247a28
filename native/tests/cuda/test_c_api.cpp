// The CUDA engine's C ABI on any machine, GPU or not (CTest runs it in CI,
// which has the toolkit and no GPU): versions, the runtime query, clean
// errors without a device, null and mismatched arguments, message copies.
// With a device, engine lifecycle basics.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <latch>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "rh_cuda.h"
#include "rh_cuda.hpp"

using rh::cuda_abi::make;

namespace {

int device_count() {
    auto info = make<rh_cuda_runtime_info>();
    return rh_cuda_get_runtime_info(&info) == RH_CUDA_OK ? info.device_count : 0;
}

rh_cuda_engine_options options(int32_t dtype = RH_CUDA_FLOAT64) {
    auto o = make<rh_cuda_engine_options>();
    o.device = 0;
    o.dtype = dtype;
    o.n_features = 3;
    o.fit_intercept = 1;
    return o;
}

}  // namespace

TEST(CudaAbi, VersionIsTheHeaders) {
    EXPECT_EQ(rh_cuda_abi_version(), static_cast<uint32_t>(RH_CUDA_ABI_VERSION));
    EXPECT_NO_THROW(rh::cuda_abi::check_abi());
}

TEST(CudaAbi, RuntimeInfoAnswersWithOrWithoutADevice) {
    auto info = make<rh_cuda_runtime_info>();
    ASSERT_EQ(rh_cuda_get_runtime_info(&info), RH_CUDA_OK);
    EXPECT_GE(info.device_count, 0);
    EXPECT_GT(info.runtime_version, 0);
    EXPECT_EQ(info.struct_size, sizeof(info));
}

TEST(CudaAbi, WithoutADeviceCreateFailsCleanlyWithAReason) {
    if (device_count() > 0) GTEST_SKIP() << "a CUDA device is present";
    const auto o = options();
    rh_cuda_engine_t engine = reinterpret_cast<rh_cuda_engine_t>(0x1);
    EXPECT_EQ(rh_cuda_engine_create(&o, &engine), RH_CUDA_UNAVAILABLE);
    EXPECT_EQ(engine, nullptr);
    const std::string message = rh::cuda_abi::process_last_error();
    EXPECT_NE(message.find("no CUDA device"), std::string::npos) << message;
    try {
        rh::cuda_abi::Engine wrapped(o);
        FAIL() << "an engine without a device";
    } catch (const rh::cuda_abi::CudaEngineError& error) {
        EXPECT_EQ(error.status(), RH_CUDA_UNAVAILABLE);
    }
}

TEST(CudaAbi, NullAndMismatchedArgumentsAreInvalid) {
    rh_cuda_engine_t engine = nullptr;
    EXPECT_EQ(rh_cuda_engine_create(nullptr, &engine), RH_CUDA_INVALID_ARGUMENT);
    auto o = options();
    EXPECT_EQ(rh_cuda_engine_create(&o, nullptr), RH_CUDA_INVALID_ARGUMENT);
    o.abi_version = (RH_CUDA_ABI_VERSION_MAJOR + 1) << 16;
    EXPECT_EQ(rh_cuda_engine_create(&o, &engine), RH_CUDA_INVALID_ARGUMENT);
    EXPECT_NE(rh::cuda_abi::process_last_error().find("ABI major"), std::string::npos);
    o = options();
    o.struct_size = 8;
    EXPECT_EQ(rh_cuda_engine_create(&o, &engine), RH_CUDA_INVALID_ARGUMENT);
    EXPECT_EQ(rh_cuda_get_runtime_info(nullptr), RH_CUDA_INVALID_ARGUMENT);
    // Calls on a null engine.
    EXPECT_EQ(rh_cuda_engine_destroy(nullptr), RH_CUDA_OK);
    EXPECT_EQ(rh_cuda_engine_synchronize(nullptr), RH_CUDA_INVALID_ARGUMENT);
    auto diagnostics = make<rh_cuda_diagnostics>();
    EXPECT_EQ(rh_cuda_engine_update(nullptr, nullptr, nullptr, nullptr, &diagnostics), RH_CUDA_INVALID_ARGUMENT);
    EXPECT_EQ(rh_cuda_engine_update_batches(nullptr, nullptr, 10, nullptr, nullptr, &diagnostics, 1),
              RH_CUDA_INVALID_ARGUMENT);
}

TEST(CudaAbi, MessagesAreCopiedIntoTheCallersBufferAndTruncated) {
    auto o = options();
    o.struct_size = 8;
    rh_cuda_engine_t engine = nullptr;
    ASSERT_EQ(rh_cuda_engine_create(&o, &engine), RH_CUDA_INVALID_ARGUMENT);
    uint64_t needed = 0;
    ASSERT_EQ(rh_cuda_process_last_error(nullptr, 0, &needed), RH_CUDA_OK);
    ASSERT_GT(needed, 5u);
    std::vector<char> small(5, 'x');
    ASSERT_EQ(rh_cuda_process_last_error(small.data(), small.size(), &needed), RH_CUDA_OK);
    EXPECT_EQ(small[4], '\0');
    EXPECT_EQ(std::strlen(small.data()), 4u);
    std::vector<char> full(needed);
    rh_cuda_process_last_error(full.data(), full.size(), nullptr);
    EXPECT_EQ(std::string(full.data()), rh::cuda_abi::process_last_error());
}

// Two threads whose engine creation fails with different messages each read
// their own: the message is per thread. The order is forced (thread A fails,
// then B fails, then A reads), so with one process-wide message A would read
// B's every time; nothing here depends on timing.
TEST(CudaAbi, EachThreadReadsTheMessageOfItsOwnFailure) {
    std::latch a_failed(1), b_failed(1);
    std::string a_message, b_message;
    std::thread a([&] {
        rh_cuda_engine_t engine = nullptr;
        EXPECT_EQ(rh_cuda_engine_create(nullptr, &engine), RH_CUDA_INVALID_ARGUMENT);
        a_failed.count_down();
        b_failed.wait();
        a_message = rh::cuda_abi::process_last_error();
    });
    std::thread b([&] {
        a_failed.wait();
        auto o = options();
        o.abi_version = (RH_CUDA_ABI_VERSION_MAJOR + 1) << 16;
        rh_cuda_engine_t engine = nullptr;
        EXPECT_EQ(rh_cuda_engine_create(&o, &engine), RH_CUDA_INVALID_ARGUMENT);
        b_failed.count_down();
        b_message = rh::cuda_abi::process_last_error();
    });
    a.join();
    b.join();
    EXPECT_EQ(a_message, "engine options must not be null");
    EXPECT_EQ(b_message, "engine options was built for another ABI major version");
    // And a thread that never failed reads no message.
    std::string fresh = "unset";
    std::thread([&] { fresh = rh::cuda_abi::process_last_error(); }).join();
    EXPECT_EQ(fresh, "");
}

TEST(CudaAbi, WithADeviceAnEngineReportsItself) {
    if (device_count() == 0) GTEST_SKIP() << "no CUDA device";
    rh::cuda_abi::Engine engine(options(RH_CUDA_FLOAT32));
    const auto features = engine.features();
    EXPECT_EQ(features.n_parameters, 4);
    EXPECT_EQ(features.dtype, RH_CUDA_FLOAT32);
    EXPECT_EQ(features.updates, 0);
    const auto counters = engine.counters();
    EXPECT_EQ(counters.n_features_in, 3);
    EXPECT_EQ(counters.batch_count, 0);
}

namespace {

// A host batch of `rows` rows of y = x0 - 2 x1 + 0.5 x2 + 0.3 (+ an outlier
// per 50 rows): the arrays live as long as the struct is used.
struct HostBatch {
    std::vector<double> X, y;
    rh_cuda_batch batch = make<rh_cuda_batch>();
    HostBatch(int rows, double shift) : X(static_cast<std::size_t>(rows) * 3), y(static_cast<std::size_t>(rows)) {
        for (int i = 0; i < rows; ++i) {
            for (int j = 0; j < 3; ++j) X[i * 3 + j] = std::sin(0.37 * i + 1.3 * j + shift);
            y[i] = X[i * 3] - 2 * X[i * 3 + 1] + 0.5 * X[i * 3 + 2] + 0.3 + (i % 50 == 0 ? 40.0 : 0.0);
        }
        batch.memory = RH_CUDA_MEMORY_HOST;
        batch.dtype = RH_CUDA_FLOAT64;
        batch.rows = rows;
        batch.features = 3;
        batch.X = X.data();
        batch.y = y.data();
    }
};

rh_cuda_solver_config solver_config() {
    auto c = make<rh_cuda_solver_config>();
    c.tau = 1.345;
    c.lambda_scale = 1.0;
    c.bandwidth_scale = 1.0;
    c.tol = 1e-6;
    c.ridge = 1e-8;
    c.penalty = RH_CUDA_PENALTY_NONE;
    c.max_iter = 50;
    c.fit_intercept = 1;
    return c;
}

struct HostCopy {
    std::vector<double> coefficients = std::vector<double>(4), information = std::vector<double>(16);
    rh_cuda_state_counters counters{};
};

HostCopy copy_of(rh::cuda_abi::Engine& engine) {
    HostCopy out;
    auto state = make<rh_cuda_host_state>();
    state.coefficients = out.coefficients.data();
    state.information = out.information.data();
    state.n_parameters = 4;
    engine.copy_state(state);
    out.counters = state.counters;
    return out;
}

}  // namespace

// rh_cuda_engine_revert (ABI 1.3): the state an update replaced comes back,
// bit for bit, once; not after a failed update (it staged over it) or a
// restore, and not twice.
TEST(CudaAbi, WithADeviceRevertPutsBackWhatTheLastUpdateReplaced) {
    if (device_count() == 0) GTEST_SKIP() << "no CUDA device";
    rh::cuda_abi::Engine engine(options());
    const auto config = solver_config();
    EXPECT_EQ(rh_cuda_engine_revert(engine.handle()), RH_CUDA_INVALID_STATE);  // nothing committed yet
    HostBatch first(400, 0.0), second(300, 0.5);
    engine.update(first.batch, config, nullptr);
    const HostCopy after_first = copy_of(engine);
    engine.update(second.batch, config, nullptr);
    EXPECT_EQ(engine.counters().batch_count, 2);
    ASSERT_EQ(rh_cuda_engine_revert(engine.handle()), RH_CUDA_OK);
    const HostCopy reverted = copy_of(engine);
    EXPECT_EQ(reverted.coefficients, after_first.coefficients);
    EXPECT_EQ(reverted.information, after_first.information);
    EXPECT_EQ(reverted.counters.batch_count, 1);
    EXPECT_EQ(reverted.counters.n_samples_seen, 400);
    EXPECT_EQ(rh_cuda_engine_revert(engine.handle()), RH_CUDA_INVALID_STATE);  // once
    // The stream goes on from the reverted state with the bits it had.
    engine.update(second.batch, config, nullptr);
    const HostCopy again = copy_of(engine);
    engine.revert();
    engine.update(second.batch, config, nullptr);
    EXPECT_EQ(copy_of(engine).information, again.information);
    // A failed update stages over the kept state: no revert after it.
    HostBatch bad(10, 0.0);
    bad.y[3] = std::nan("");
    EXPECT_EQ(rh_cuda_engine_update(engine.handle(), &bad.batch, &config, nullptr, nullptr), RH_CUDA_INVALID_ARGUMENT);
    auto diagnostics = make<rh_cuda_diagnostics>();
    EXPECT_EQ(rh_cuda_engine_update(engine.handle(), &bad.batch, &config, nullptr, &diagnostics),
              RH_CUDA_NON_FINITE_INPUT);
    EXPECT_EQ(rh_cuda_engine_revert(engine.handle()), RH_CUDA_INVALID_STATE);
    EXPECT_EQ(copy_of(engine).information, again.information);  // the failure changed nothing
}

// rh_cuda_engine_update_batches (ABI 1.6): the loop of updates over the
// slices, bit for bit, in one call; all slices or none; revert after it puts
// back the state before the call.
TEST(CudaAbi, WithADeviceUpdateBatchesIsTheLoopOfUpdatesAndAllOrNothing) {
    if (device_count() == 0) GTEST_SKIP() << "no CUDA device";
    const auto config = solver_config();
    HostBatch whole(1000, 0.2);
    rh::cuda_abi::Engine looped(options()), batched(options());
    for (int first = 0; first < 1000; first += 400) {
        HostBatch slice = whole;  // the same values, the slice's rows
        slice.batch.X = whole.X.data() + first * 3;
        slice.batch.y = whole.y.data() + first;
        slice.batch.rows = std::min(400, 1000 - first);
        looped.update(slice.batch, config, nullptr);
    }
    std::vector<double> last(4);
    const auto reports = batched.update_batches(whole.batch, 400, config, last.data());
    ASSERT_EQ(reports.size(), 3u);
    const HostCopy a = copy_of(looped), b = copy_of(batched);
    EXPECT_EQ(a.coefficients, b.coefficients);
    EXPECT_EQ(a.information, b.information);
    EXPECT_EQ(b.coefficients, last);
    EXPECT_EQ(b.counters.batch_count, 3);
    EXPECT_EQ(b.counters.n_samples_seen, 1000);
    // Refused before anything runs: a diagnostics count that is not the slices', a batch size below 1.
    std::vector<rh_cuda_diagnostics> two(2, make<rh_cuda_diagnostics>());
    EXPECT_EQ(rh_cuda_engine_update_batches(batched.handle(), &whole.batch, 400, &config, nullptr, two.data(), 2),
              RH_CUDA_INVALID_ARGUMENT);
    EXPECT_EQ(rh_cuda_engine_update_batches(batched.handle(), &whole.batch, 0, &config, nullptr, two.data(), 0),
              RH_CUDA_INVALID_ARGUMENT);
    // A NaN in the last slice: the error, and the state before the call.
    HostBatch bad = whole;
    bad.batch.X = bad.X.data();
    bad.batch.y = bad.y.data();
    bad.y[950] = std::nan("");
    std::vector<rh_cuda_diagnostics> three(3, make<rh_cuda_diagnostics>());
    EXPECT_EQ(rh_cuda_engine_update_batches(batched.handle(), &bad.batch, 400, &config, nullptr, three.data(), 3),
              RH_CUDA_NON_FINITE_INPUT);
    const HostCopy unchanged = copy_of(batched);
    EXPECT_EQ(unchanged.coefficients, b.coefficients);
    EXPECT_EQ(unchanged.information, b.information);
    EXPECT_EQ(unchanged.counters.batch_count, 3);
    EXPECT_EQ(rh_cuda_engine_revert(batched.handle()), RH_CUDA_INVALID_STATE);
    // After a successful call, revert gives back the state before it, once.
    batched.update_batches(whole.batch, 400, config, nullptr);
    EXPECT_EQ(batched.counters().batch_count, 6);
    ASSERT_EQ(rh_cuda_engine_revert(batched.handle()), RH_CUDA_OK);
    const HostCopy reverted = copy_of(batched);
    EXPECT_EQ(reverted.coefficients, b.coefficients);
    EXPECT_EQ(reverted.information, b.information);
    EXPECT_EQ(reverted.counters.batch_count, 3);
    EXPECT_EQ(rh_cuda_engine_revert(batched.handle()), RH_CUDA_INVALID_STATE);
}

// Engines lend the process's cuBLAS/cuSOLVER handles (device_context.cuh):
// an engine built after another was dropped takes its handles, bound to
// the new engine's stream. Engines alive at once, built and dropped in an
// interleaved order, each solving the same batch on the pipeline give the
// first engine's bits. At d = 4 the pipeline's cuBLAS calls are its GEMVs
// and cuSOLVER is asked for workspace sizes only (the small systems have
// their own kernels): the math mode and cuSOLVER's stream are the Python
// test's (d = 81, test_native_cuda.py). A handle left on a stream of the
// legacy default kind races rather than fails, so this is no proof of the
// binding; it is the ABI's lifecycle with pooled handles.
TEST(CudaAbi, WithADeviceEnginesBuiltAfterOthersWentSolveAsTheFirstDid) {
    if (device_count() == 0) GTEST_SKIP() << "no CUDA device";
    const auto config = solver_config();
    HostBatch batch(600, 0.1);
    auto pipeline_options = [] {
        auto o = options();
        o.solver_choice = RH_CUDA_SOLVER_PIPELINE;
        return o;
    };
    auto solve = [&](rh::cuda_abi::Engine& engine) {
        engine.update(batch.batch, config, nullptr);
        return copy_of(engine);
    };
    auto first = std::make_unique<rh::cuda_abi::Engine>(pipeline_options());
    const HostCopy want = solve(*first);
    for (int round = 0; round < 4; ++round) {
        auto second = std::make_unique<rh::cuda_abi::Engine>(pipeline_options());  // two lent at once
        first.reset();                                                              // its handles go back
        auto third = std::make_unique<rh::cuda_abi::Engine>(pipeline_options());   // and come to this one
        for (auto* engine : {second.get(), third.get()}) {
            const HostCopy got = solve(*engine);
            EXPECT_EQ(got.coefficients, want.coefficients) << "round " << round;
            EXPECT_EQ(got.information, want.information) << "round " << round;
        }
        second.reset();
        first = std::move(third);  // dropped at the next round's start
    }
}

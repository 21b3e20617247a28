// The CUDA engine's C ABI on any machine, GPU or not (CTest runs it in CI,
// which has the toolkit and no GPU): versions, the runtime query, clean
// errors without a device, null and mismatched arguments, message copies.
// With a device, engine lifecycle basics.
#include <gtest/gtest.h>

#include <cstring>
#include <latch>
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

// DeviceArena and ArenaLayout: where a layout puts each array (no device
// needed), and, with a device, that placing makes every array a view of one
// allocation and that release() resets exactly the arrays still viewing it.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include "device_arena.cuh"

namespace {

using rh::cuda::ArenaLayout;
using rh::cuda::DeviceArena;
using rh::cuda::DeviceArray;

int device_count() {
    int count = 0;
    return cudaGetDeviceCount(&count) == cudaSuccess ? count : 0;
}

TEST(CudaArenaLayout, PadsEachArrayTo256BytesAndAddsAGuardUnit) {
    DeviceArray<double> first;
    DeviceArray<float> second;
    DeviceArray<unsigned> empty;
    ArenaLayout layout;
    layout.add(first, 5);     // 40 bytes: 256 of padding, 256 of guard
    layout.add(second, 100);  // 400 bytes: 512, 256 of guard
    layout.add(empty, 0);     // at least one element
    EXPECT_EQ(layout.bytes(), 512u + 768u + 512u);
}

TEST(CudaArena, WithADevicePlaceMakesViewsAndReleaseResetsThoseStillViewing) {
    if (device_count() == 0) GTEST_SKIP() << "no CUDA device";
    DeviceArena arena;
    DeviceArray<double> first, second;
    DeviceArray<int> third;
    ArenaLayout layout;
    layout.add(first, 5);
    layout.add(second, 3);
    layout.add(third, 7);
    EXPECT_TRUE(arena.place(0, layout));
    ASSERT_TRUE(arena.placed());
    EXPECT_EQ(first.size(), 5);
    EXPECT_EQ(second.data(), first.data() + 64);  // 512 bytes on: padding and guard
    EXPECT_EQ(reinterpret_cast<const unsigned char*>(third.data()),
              reinterpret_cast<const unsigned char*>(second.data()) + 512);
    try {
        arena.place(0, layout);
        ADD_FAILURE() << "a second place must throw (the views would move)";
    } catch (const rh::cuda::Failure& failure) {
        EXPECT_EQ(failure.status(), rh::core::Status::invalid_state);
    }
    ASSERT_TRUE(second.reserve(0, 1000));  // grows onto storage of its own
    double* own = second.data();
    arena.release();
    EXPECT_FALSE(arena.placed());
    EXPECT_EQ(first.data(), nullptr);
    EXPECT_EQ(first.size(), 0);
    EXPECT_EQ(third.data(), nullptr);
    EXPECT_EQ(second.data(), own);  // kept: it no longer viewed the arena
    EXPECT_EQ(second.size(), 1000);
    ArenaLayout again;
    again.add(first, 9);
    EXPECT_TRUE(arena.place(0, again));  // placed again after a release
    EXPECT_EQ(first.size(), 9);
    EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
}

}  // namespace

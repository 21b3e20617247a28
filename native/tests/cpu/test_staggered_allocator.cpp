// The engine's row buffers: on cache lines, at distinct page offsets, and
// usable as ordinary vectors (grow, swap, free).
#include <gtest/gtest.h>

#include <cstdint>
#include <set>
#include <utility>

#include "cpu/platform/staggered_allocator.hpp"

namespace {

std::uintptr_t address(const void* p) { return reinterpret_cast<std::uintptr_t>(p); }

TEST(StaggeredAllocator, BuffersStartOnCacheLinesAtDistinctPageOffsets) {
    std::vector<rh::cpu::StaggeredVector<double>> buffers(8);
    std::set<std::uintptr_t> offsets;
    for (auto& buffer : buffers) {
        buffer.resize(4096);
        EXPECT_EQ(address(buffer.data()) % 64, 0u);
        offsets.insert(address(buffer.data()) % rh::cpu::kPageBytes);
    }
    EXPECT_EQ(offsets.size(), buffers.size()) << "eight buffers in a row share a page offset";
    // Any eight allocations in a row sit 512 bytes apart.
    for (auto a = offsets.begin(), b = std::next(a); b != offsets.end(); ++a, ++b) EXPECT_EQ(*b - *a, 512u);
}

TEST(StaggeredAllocator, BehavesAsAVector) {
    rh::cpu::StaggeredVector<float> a(1000, 1.5f), b(3, 2.0f);
    const float* a_data = a.data();
    std::swap(a, b);  // storage moves, nothing is copied
    EXPECT_EQ(b.data(), a_data);
    EXPECT_EQ(a.size(), 3u);
    b.resize(100000, 4.0f);  // grows: new storage, old values kept, old block freed
    EXPECT_EQ(address(b.data()) % 64, 0u);
    EXPECT_EQ(b[999], 1.5f);
    EXPECT_EQ(b[99999], 4.0f);
}

TEST(StaggeredAllocator, RefusesASizeWhoseBytesOverflow) {
    rh::cpu::StaggeredAllocator<double> allocator;
    EXPECT_THROW(allocator.allocate(SIZE_MAX / 4), std::bad_array_new_length);
}

}  // namespace

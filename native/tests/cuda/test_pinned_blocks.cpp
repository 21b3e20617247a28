// The engines' pinned blocks (pinned_blocks.hpp) on malloc: a block given
// back serves the next request of its size class without a new allocation
// (a new engine pins nothing its predecessor pinned), requests at the same
// time get blocks of their own, sizes round up to a power of two from
// 256 B, a failing allocation leaves the cache as it was, and threads
// taking and giving back blocks never share one.
#include <gtest/gtest.h>

#include <atomic>
#include <cstdlib>
#include <mutex>
#include <new>
#include <set>
#include <stdexcept>
#include <thread>
#include <vector>

#include "pinned_blocks.hpp"

namespace {

struct CountingAllocator {
    static inline std::atomic<int> made{0};
    static inline std::atomic<bool> fail{false};
    static void* allocate(std::size_t bytes) {
        if (fail) throw std::bad_alloc();
        ++made;
        return std::malloc(bytes);  // kept by the cache until the test's end (a test process)
    }
};

using Cache = rh::cuda::BlockCache<CountingAllocator>;

}  // namespace

TEST(PinnedBlocks, SizesRoundUpToAPowerOfTwoFrom256Bytes) {
    EXPECT_EQ(Cache::class_bytes(0), 256u);
    EXPECT_EQ(Cache::class_bytes(1), 256u);
    EXPECT_EQ(Cache::class_bytes(256), 256u);
    EXPECT_EQ(Cache::class_bytes(257), 512u);
    EXPECT_EQ(Cache::class_bytes(3 << 20), 4u << 20);
    EXPECT_THROW(Cache::class_bytes((std::size_t{1} << 47) + 1), std::length_error);
}

TEST(PinnedBlocks, ABlockGivenBackServesTheNextRequestOfItsClass) {
    Cache cache;
    CountingAllocator::made = 0;
    auto first = cache.acquire(100);
    EXPECT_EQ(first.bytes, 256u);
    EXPECT_EQ(CountingAllocator::made.load(), 1);
    cache.release(first);
    EXPECT_EQ(cache.idle(200), 1u);
    auto again = cache.acquire(200);  // the same class
    EXPECT_EQ(again.pointer, first.pointer);
    EXPECT_EQ(CountingAllocator::made.load(), 1);  // nothing new pinned
    auto other = cache.acquire(200);               // a request at the same time: a block of its own
    EXPECT_NE(other.pointer, again.pointer);
    auto larger = cache.acquire(1000);  // another class
    EXPECT_EQ(larger.bytes, 1024u);
    EXPECT_EQ(CountingAllocator::made.load(), 3);
    cache.release(again);
    cache.release(other);
    cache.release(larger);
    cache.release({});  // an empty block: nothing kept
    EXPECT_EQ(cache.idle(256), 2u);
    EXPECT_EQ(cache.idle(1024), 1u);
}

TEST(PinnedBlocks, AFailingAllocationLeavesTheCacheAsItWas) {
    Cache cache;
    CountingAllocator::fail = true;
    EXPECT_THROW(cache.acquire(64), std::bad_alloc);
    CountingAllocator::fail = false;
    EXPECT_EQ(cache.idle(64), 0u);
    cache.release(cache.acquire(64));
    EXPECT_EQ(cache.idle(64), 1u);
}

TEST(PinnedBlocks, ThreadsTakingAndGivingBackBlocksNeverShareOne) {
    Cache cache;
    std::mutex mutex;
    std::set<void*> in_use;
    std::atomic<int> shared{0};
    std::vector<std::thread> threads;
    for (int t = 0; t < 4; ++t) {
        threads.emplace_back([&] {
            for (int round = 0; round < 2000; ++round) {
                auto block = cache.acquire(static_cast<std::size_t>(100 + round % 3 * 300));
                {
                    std::lock_guard<std::mutex> lock(mutex);
                    if (!in_use.insert(block.pointer).second) ++shared;
                }
                {
                    std::lock_guard<std::mutex> lock(mutex);
                    in_use.erase(block.pointer);
                }
                cache.release(block);
            }
        });
    }
    for (auto& thread : threads) thread.join();
    EXPECT_EQ(shared.load(), 0);
    // at most one block per thread and class was ever needed at once
    EXPECT_LE(cache.idle(256) + cache.idle(512) + cache.idle(1024), 12u);
}

// Steady-state updates allocate nothing: every heap allocation of the
// process is counted through a replaced global operator new, and after the
// first batch of a given size the engine must not allocate again.
#include <gtest/gtest.h>

#include <atomic>
#include <cstdlib>
#include <new>
#include <thread>
#include <utility>

#include "cpu/engine.hpp"
#include "cpu/platform/worker_pool.hpp"
#include "test_fixtures.hpp"

namespace {
std::atomic<long> allocations{0};
}

void* operator new(std::size_t size) {
    ++allocations;
    if (void* p = std::malloc(size ? size : 1)) return p;
    throw std::bad_alloc();
}
void operator delete(void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }
// The aligned forms too: the engine's row buffers come from them
// (cpu/staggered_allocator.hpp).
void* operator new(std::size_t size, std::align_val_t alignment) {
    ++allocations;
    const std::size_t align = static_cast<std::size_t>(alignment);
    if (void* p = std::aligned_alloc(align, (size + align - 1) / align * align)) return p;
    throw std::bad_alloc();
}
void operator delete(void* p, std::align_val_t) noexcept { std::free(p); }
void operator delete(void* p, std::size_t, std::align_val_t) noexcept { std::free(p); }

using namespace rh;

template <class T>
class SteadyState : public ::testing::Test {};
using Dtypes = ::testing::Types<float, double>;
TYPED_TEST_SUITE(SteadyState, Dtypes);

TYPED_TEST(SteadyState, UpdatesAfterTheFirstAllocateNothing) {
    using T = TypeParam;
    for (bool meat : {false, true}) {  // the meat: inference=True, the estimator's default
        for (auto penalty : {core::Penalty::none, core::Penalty::l1}) {
            cpu::Engine<T> engine(1);
            core::SolverConfig config;
            config.penalty = penalty;
            const auto big = test::linear_batch<T>(500, 6, 1), small = test::linear_batch<T>(200, 6, 2);
            test::OwnedState<T> a(6, true, meat), b(6, true, meat);
            test::update_into(engine, a, big, config, b);  // warm-up: workspaces grow here
            const auto grown = engine.workspace_allocations();
            const long before = allocations.load();
            for (int round = 0; round < 5; ++round) {
                test::update_into(engine, b, small, config, a);
                test::update_into(engine, a, big, config, b);
            }
            EXPECT_EQ(allocations.load() - before, 0) << "heap allocations in steady state, meat " << meat;
            EXPECT_EQ(engine.workspace_allocations(), grown);
        }
    }
}

// The fast kernel path (forced), one and two threads: the worker thread is
// started (and allocates) during the warm-up only.
TYPED_TEST(SteadyState, FastPathUpdatesAfterTheFirstAllocateNothing) {
    using T = TypeParam;
    for (int threads : {1, 2}) {
        for (auto [penalty, meat] : {std::pair{core::Penalty::none, false}, std::pair{core::Penalty::none, true},
                                     std::pair{core::Penalty::l1, false}}) {
            cpu::Engine<T> engine(threads, cpu::KernelChoice::fast);
            core::SolverConfig config;
            config.penalty = penalty;
            // 40000 x 8: large enough for every row split of the two-thread case.
            const auto big = test::linear_batch<T>(40000, 8, 1), small = test::linear_batch<T>(3000, 8, 2);
            test::OwnedState<T> a(8, true, meat), b(8, true, meat);
            test::update_into(engine, a, big, config, b);  // warm-up: workspaces and the worker grow here
            const auto grown = engine.workspace_allocations();
            const long before = allocations.load();
            for (int round = 0; round < 3; ++round) {
                test::update_into(engine, b, small, config, a);
                test::update_into(engine, a, big, config, b);
            }
            EXPECT_EQ(allocations.load() - before, 0) << "heap allocations in steady state, threads " << threads << ", meat " << meat;
            EXPECT_EQ(engine.workspace_allocations(), grown);
        }
    }
}

// Waits (a liveness wait, no time limit) until every started worker sleeps
// on its futex: the next dispatch must wake, and steer, them.
template <class Pool>
void wait_until_asleep(const Pool& pool) {
    while (pool.sleeping_workers() < pool.started_workers()) std::this_thread::yield();
}

// The update above meets sleeping workers only when the scheduler lets them
// fall asleep between batches, so it took the waking path at random (and
// allocated there: issue 24). Here every update starts with its worker asleep.
TYPED_TEST(SteadyState, FastPathUpdatesThatWakeSleepingWorkersAllocateNothing) {
    using T = TypeParam;
    for (auto penalty : {core::Penalty::none, core::Penalty::l1}) {
        cpu::Engine<T> engine(2, cpu::KernelChoice::fast);
        core::SolverConfig config;
        config.penalty = penalty;
        const auto big = test::linear_batch<T>(40000, 8, 1), small = test::linear_batch<T>(3000, 8, 2);
        test::OwnedState<T> a(8, true), b(8, true);
        test::update_into(engine, a, big, config, b);
        ASSERT_EQ(engine.started_workers(), 1);
        const long before = allocations.load();
        for (int round = 0; round < 3; ++round) {
            wait_until_asleep(engine);
            test::update_into(engine, b, small, config, a);
            wait_until_asleep(engine);
            test::update_into(engine, a, big, config, b);
        }
        EXPECT_EQ(allocations.load() - before, 0) << "heap allocations while waking sleeping workers";
    }
}

// The pool alone: a dispatch or a wake() that finds its workers asleep
// steers them away from the caller's CPU (Linux, two CPUs or more) and
// allocates nothing doing so.
TEST(WorkerPoolAllocations, WakingSleepingWorkersAllocatesNothing) {
    cpu::WorkerPool pool;
    std::atomic<int> runs{0};
    auto task = [&](int) { runs.fetch_add(1); };
    pool.run(3, task);  // starts two workers (allocates)
    const long before = allocations.load();
    for (int round = 0; round < 5; ++round) {
        wait_until_asleep(pool);
        pool.run(3, task);
        wait_until_asleep(pool);
        const auto wake_ups = pool.wake_ups();
        pool.wake();
        while (pool.wake_ups() == wake_ups) std::this_thread::yield();
    }
    EXPECT_EQ(allocations.load() - before, 0) << "heap allocations while waking sleeping workers";
    EXPECT_EQ(runs.load(), 18);
}

TEST(SteadyStateGrowth, ALargerBatchGrowsTheWorkspacesOnce) {
    cpu::Engine<double> engine(1);
    const auto small = test::linear_batch<double>(100, 4, 1), large = test::linear_batch<double>(900, 4, 2);
    test::OwnedState<double> a(4, true), b(4, true);
    test::update_into(engine, a, small, core::SolverConfig{}, b);
    const auto after_small = engine.workspace_allocations();
    test::update_into(engine, b, large, core::SolverConfig{}, a);
    const auto after_large = engine.workspace_allocations();
    EXPECT_GT(after_large, after_small);
    test::update_into(engine, a, large, core::SolverConfig{}, b);
    EXPECT_EQ(engine.workspace_allocations(), after_large);
}

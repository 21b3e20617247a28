// The fast path's worker pool (cpu/platform/worker_pool.hpp) and the part
// runner over it (cpu/parallel_reduce.hpp). Nothing here depends on timing:
// a test that needs a sleeping worker waits until the pool reports one.
#include <gtest/gtest.h>

#include <atomic>
#include <cmath>
#include <thread>
#include <vector>
#if defined(__linux__)
#include <sched.h>
#endif

#include "cpu/parallel_reduce.hpp"
#include "cpu/platform/worker_pool.hpp"

using namespace rh;

namespace {

// Waits (without a time limit: a liveness wait, not a timing assumption)
// until every started worker sleeps on the futex.
void wait_until_asleep(const cpu::WorkerPool& pool) {
    while (pool.sleeping_workers() < pool.started_workers()) std::this_thread::yield();
}

}  // namespace

TEST(WorkerPoolTest, EveryPartRunsExactlyOnce) {
    cpu::WorkerPool pool;
    for (int parts : {1, 2, 3, 5}) {
        for (int round = 0; round < 2000; ++round) {
            std::vector<std::atomic<int>> hits(parts);
            auto task = [&](int part) { hits[part].fetch_add(1); };
            pool.run(parts, task);
            for (int k = 0; k < parts; ++k) ASSERT_EQ(hits[k].load(), 1) << parts << " parts, round " << round;
        }
    }
    EXPECT_EQ(pool.started_workers(), 4);
}

// A dispatch that finds its workers asleep wakes them and is reported as
// such, never as an awake worker missing its part (which would make the
// engine stop splitting); wake() alone runs nothing.
TEST(WorkerPoolTest, SleepingWorkersAreWokenNotReportedMissing) {
    cpu::WorkerPool pool;
    std::vector<std::atomic<int>> hits(2);
    auto task = [&](int part) { hits[part].fetch_add(1); };
    pool.run(2, task);  // starts the worker
    for (int round = 0; round < 3; ++round) {
        wait_until_asleep(pool);
        EXPECT_NE(pool.run(2, task), cpu::WorkerPool::Dispatch::late_awake) << "round " << round;
        wait_until_asleep(pool);
        const auto wake_ups = pool.wake_ups();
        pool.wake();
        while (pool.wake_ups() == wake_ups) std::this_thread::yield();  // it woke, and ran nothing
    }
    EXPECT_EQ(hits[0].load(), 4);
    EXPECT_EQ(hits[1].load(), 4);
}

#if defined(__linux__)
// A worker woken from its futex sleep wakes on another CPU than the caller
// that woke it (the pool narrows a sleeper's CPU set to the others before
// waking it: left to the scheduler it could be placed behind the busy
// caller). Once it runs a part it has its full CPU set again.
TEST(WorkerPoolTest, WokenWorkersWakeAwayFromTheCallerAndRunWithTheirFullCpuSet) {
    cpu_set_t allowed;
    ASSERT_EQ(sched_getaffinity(0, sizeof allowed, &allowed), 0);
    if (CPU_COUNT(&allowed) < 2) GTEST_SKIP() << "one CPU";
    cpu::WorkerPool pool;
    std::atomic<int> worker_cpu_count{-1};
    const auto caller = std::this_thread::get_id();
    auto task = [&](int) {
        if (std::this_thread::get_id() == caller) return;  // the caller may run the worker's part too
        cpu_set_t own;
        worker_cpu_count = sched_getaffinity(0, sizeof own, &own) == 0 ? CPU_COUNT(&own) : -2;
    };
    pool.run(2, task);  // starts the worker
    // The caller stays on one CPU for the test, so "the caller's CPU" is fixed.
    const int here = sched_getcpu();
    cpu_set_t pinned;
    CPU_ZERO(&pinned);
    CPU_SET(here, &pinned);
    ASSERT_EQ(sched_setaffinity(0, sizeof pinned, &pinned), 0);
    for (int round = 0; round < 5; ++round) {
        wait_until_asleep(pool);
        const auto wake_ups = pool.wake_ups();
        worker_cpu_count = -1;
        pool.wake();
        while (pool.wake_ups() == wake_ups) std::this_thread::yield();
        EXPECT_NE(pool.last_wake_cpu(), here) << "round " << round;
        // The awake worker claims a part sooner or later; until then the
        // caller runs both parts (the worker is not late: it was woken).
        while (worker_cpu_count.load() < 0) pool.run(2, task);
        EXPECT_EQ(worker_cpu_count.load(), CPU_COUNT(&allowed)) << "round " << round;
    }
    ASSERT_EQ(sched_setaffinity(0, sizeof allowed, &allowed), 0);
}
#endif

// The parts' results are added in part order, from zero: with three or
// more parts a different order gives other bits (two parts commute).
TEST(ParallelReduce, AddsThePartsInPartOrderWhoeverRunsThem) {
    cpu::WorkerPool pool;
    const double values[4] = {1.0, 1e16, -1e16, 3.0};  // in order: (((0 + 1) + 1e16) - 1e16) + 3 = 3
    for (int parts : {3, 4}) {
        for (bool serial : {false, true}) {
            cpu::PartRunner runner(&pool, parts);
            if (serial) runner.run_serially();
            const double total = cpu::parallel_reduce<double>(runner, parts, 64 * parts,
                                                              [&](int k, cpu::RowRange) { return values[k]; });
            double in_order = 0.0;
            for (int k = 0; k < parts; ++k) in_order += values[k];
            EXPECT_EQ(total, in_order) << parts << " parts, serial " << serial;
            EXPECT_EQ(runner.dispatches(), 1);
        }
    }
}

// The partition: contiguous, covering, edges at multiples of 16 rows, and
// fixed by (rows, parts) alone.
TEST(ParallelReduce, PartRowsCoverTheRowsInSixteenRowEdges) {
    for (std::int64_t n : {1, 15, 16, 100, 4096, 40001})
        for (int parts : {1, 2, 3, 5, 64}) {
            std::int64_t next = 0;
            for (int k = 0; k < parts; ++k) {
                const cpu::RowRange rows = cpu::part_rows(k, parts, n);
                EXPECT_EQ(rows.begin, next);
                EXPECT_GE(rows.end, rows.begin);
                if (k + 1 < parts) {
                    EXPECT_EQ(rows.end % 16 == 0 || rows.end == n, true);
                }
                next = rows.end;
            }
            EXPECT_EQ(next, n);
        }
}

#include <gtest/gtest.h>

#include <atomic>
#include <thread>

#include "core/status.hpp"
#include "cpu/platform/blas_provider.hpp"
#include "cpu/platform/blas_thread_lease.hpp"
#include "cpu/platform/thread_policy.hpp"

using rh::cpu::BlasThreadLease;
using rh::cpu::ThreadPolicy;

TEST(ThreadPolicy, AllCoresAndLibraryDefault) {
    EXPECT_EQ(ThreadPolicy(1).threads(), 1);
    EXPECT_EQ(ThreadPolicy(-1).threads(), rh::cpu::available_cores());
    EXPECT_EQ(ThreadPolicy(0).threads(), rh::cpu::blas::get_num_threads());
}

TEST(ThreadPolicy, RejectsOtherNegativeCounts) {
    EXPECT_THROW(ThreadPolicy(-2), rh::core::EngineError);
}

// The pool has the leased size inside a lease and its own size after it;
// the library default (n_jobs=None) is the size outside the lease.
// A provider without a thread pool (the reference BLAS: always one thread) has nothing to lease.
#define RH_REQUIRE_BLAS_POOL()                                                                        \
    do {                                                                                              \
        rh::cpu::blas::set_num_threads(2);                                                            \
        if (rh::cpu::blas::get_num_threads() != 2)                                                    \
            GTEST_SKIP() << "the BLAS provider has no thread pool (" << rh::cpu::blas::provider_name() << ")"; \
    } while (0)

TEST(BlasThreadLease, SetsThePoolForItsLifetimeAndRestoresIt) {
    RH_REQUIRE_BLAS_POOL();
    {
        const BlasThreadLease lease(1);
        EXPECT_EQ(rh::cpu::blas::get_num_threads(), 1);
        EXPECT_EQ(rh::cpu::library_default_threads(), 2);
        EXPECT_EQ(ThreadPolicy(0).threads(), 2);
        const BlasThreadLease shared(1);  // same size: shares the pool
        EXPECT_EQ(rh::cpu::blas::get_num_threads(), 1);
    }
    EXPECT_EQ(rh::cpu::blas::get_num_threads(), 2);
    EXPECT_EQ(rh::cpu::library_default_threads(), 2);
}

// A lease of another size never runs while one is held: whatever the
// interleaving, each holder sees its own size, and the pool ends at the
// size it had before.
TEST(BlasThreadLease, LeasesOfDifferentSizesNeverOverlap) {
    RH_REQUIRE_BLAS_POOL();
    std::atomic<int> wrong{0};
    auto hold = [&](int size) {
        for (int round = 0; round < 2000; ++round) {
            const BlasThreadLease lease(size);
            if (rh::cpu::blas::get_num_threads() != size) ++wrong;
        }
    };
    std::thread one(hold, 1), two(hold, 2), three(hold, 1);
    one.join();
    two.join();
    three.join();
    EXPECT_EQ(wrong.load(), 0);
    EXPECT_EQ(rh::cpu::blas::get_num_threads(), 2);
}

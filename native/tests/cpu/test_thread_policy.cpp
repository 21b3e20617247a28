#include <gtest/gtest.h>

#include "core/status.hpp"
#include "cpu/platform/blas_provider.hpp"
#include "cpu/platform/thread_policy.hpp"

using rh::cpu::ThreadPolicy;

TEST(ThreadPolicy, ExplicitCountIsReportedAndAppliedOnlyInsideTheScope) {
    const int before = rh::cpu::blas::get_num_threads();
    ThreadPolicy policy(1);
    EXPECT_EQ(policy.threads(), 1);
    {
        ThreadPolicy::Scope scope(policy);
        EXPECT_EQ(rh::cpu::blas::get_num_threads(), 1);
    }
    EXPECT_EQ(rh::cpu::blas::get_num_threads(), before);
}

TEST(ThreadPolicy, AllCoresAndLibraryDefault) {
    EXPECT_EQ(ThreadPolicy(-1).threads(), rh::cpu::available_cores());
    EXPECT_EQ(ThreadPolicy(0).threads(), rh::cpu::blas::get_num_threads());
}

TEST(ThreadPolicy, RejectsOtherNegativeCounts) {
    EXPECT_THROW(ThreadPolicy(-2), rh::core::EngineError);
}

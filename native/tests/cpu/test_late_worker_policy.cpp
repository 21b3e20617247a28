// When the part runner stops handing parts to late workers and when it tries
// them again (cpu/platform/late_worker_policy.hpp): the rule fed dispatch
// outcomes directly, so nothing here depends on threads or timing.
#include <gtest/gtest.h>

#include <vector>

#include "cpu/platform/late_worker_policy.hpp"

using namespace rh;
using Dispatch = cpu::WorkerPool::Dispatch;
using Policy = cpu::LateWorkerPolicy;

namespace {

// Runs `stretch` serial dispatches and says whether the last one, and only
// it, was reported as the stretch's end.
void run_stretch(Policy& policy, int stretch) {
    for (int k = 0; k < stretch; ++k) {
        ASSERT_TRUE(policy.serial_next()) << "dispatch " << k << " of the stretch";
        EXPECT_EQ(policy.ran_serially(), k == stretch - 1) << "dispatch " << k << " of the stretch";
    }
    EXPECT_FALSE(policy.serial_next()) << "the workers get the dispatch after the stretch";
}

}  // namespace

TEST(LateWorkerPolicy, TwoLateAwakeDispatchesGiveAStretchOfSerialOnesThenTheWorkersAgain) {
    Policy policy;
    policy.handed_out(Dispatch::late_awake);
    EXPECT_FALSE(policy.serial_next()) << "one miss is not enough";
    policy.handed_out(Dispatch::on_time);
    policy.handed_out(Dispatch::late_awake);
    ASSERT_TRUE(policy.serial_next());
    EXPECT_EQ(policy.fallbacks(), 1);
    run_stretch(policy, Policy::kFirstSerialStretch);
    policy.handed_out(Dispatch::on_time);  // the probe: the workers are back
    policy.handed_out(Dispatch::late_awake);
    EXPECT_FALSE(policy.serial_next()) << "after a good probe, two misses again";
    policy.handed_out(Dispatch::late_awake);
    EXPECT_TRUE(policy.serial_next());
    run_stretch(policy, 2 * Policy::kFirstSerialStretch);  // the second stretch is twice as long
    EXPECT_EQ(policy.late_dispatches(), 4);
}

TEST(LateWorkerPolicy, AProbeWhoseWorkersMissAgainDoublesTheStretch) {
    Policy policy;
    policy.handed_out(Dispatch::late_awake);
    policy.handed_out(Dispatch::late_awake);
    int stretch = Policy::kFirstSerialStretch;
    for (int fallback = 1; fallback <= 5; ++fallback) {
        EXPECT_EQ(policy.fallbacks(), fallback);
        run_stretch(policy, stretch);
        policy.handed_out(Dispatch::late_awake);  // lasting contention: one miss per doubling
        stretch *= 2;
    }
    EXPECT_EQ(policy.late_dispatches(), 2 + 5);
}

TEST(LateWorkerPolicy, WorkersAsleepAtTheProbeStartTheCountOver) {
    Policy policy;
    policy.handed_out(Dispatch::late_awake);
    policy.handed_out(Dispatch::late_awake);
    run_stretch(policy, Policy::kFirstSerialStretch);
    policy.handed_out(Dispatch::late_asleep);  // they slept through the stretch: no sign of contention
    EXPECT_FALSE(policy.serial_next());
    policy.handed_out(Dispatch::late_awake);
    EXPECT_FALSE(policy.serial_next());
    policy.handed_out(Dispatch::late_awake);
    EXPECT_TRUE(policy.serial_next());
}

TEST(LateWorkerPolicy, EightDispatchesOfSleepingWorkersFallBackAndTheAwakeCountIsSeparate) {
    Policy policy;
    policy.handed_out(Dispatch::late_awake);
    for (int k = 0; k < Policy::kLateAsleepToFallBack - 1; ++k) {
        policy.handed_out(Dispatch::late_asleep);
        EXPECT_FALSE(policy.serial_next()) << k;
    }
    policy.handed_out(Dispatch::late_asleep);
    EXPECT_TRUE(policy.serial_next());
    EXPECT_EQ(policy.late_dispatches(), 1 + Policy::kLateAsleepToFallBack);
}

TEST(LateWorkerPolicy, OnTimeDispatchesNeverFallBackAndAlwaysSerialNeverHandsOut) {
    Policy policy;
    for (int k = 0; k < 1000; ++k) policy.handed_out(Dispatch::on_time);
    EXPECT_FALSE(policy.serial_next());
    EXPECT_EQ(policy.fallbacks(), 0);
    Policy forced;
    forced.always_serial();
    for (int k = 0; k < 100; ++k) {
        EXPECT_TRUE(forced.serial_next());
        EXPECT_FALSE(forced.ran_serially());
    }
}

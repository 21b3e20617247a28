// When an update's caller stops handing parts to workers that miss them, and
// when it tries them again (docs/native-cpu.md, "Threads").
//
// A worker that misses its part costs little by itself (the caller runs the
// part), but one that claimed a part and then lost its core makes the caller
// wait for it, up to a scheduler time slice. So after two dispatches whose
// awake workers missed their parts, or eight whose workers were still
// asleep, the caller runs every part itself for a stretch of dispatches.
// Then it hands parts out again: a hiccup (a hypervisor's steal, another
// process's brief burst) costs a few serial dispatches, not the rest of the
// update. The first dispatch after a stretch is a probe: if its awake
// workers miss their parts again, the next stretch is twice as long, so
// lasting contention (a BLAS pool spinning on every core) costs one late
// dispatch per doubling. Workers found asleep at the probe say nothing
// about contention (they slept through the stretch): the count starts over.
//
// On the GPU machine's 16 vCPUs, the rule before this one (two late
// dispatches: serial to the end of the update) left 1-4 of a wide stream's
// 4 batches serial in most rounds, each slower than on one thread
// (docs/performance.md, "On a 16-core server").
//
// The partition of a pass never depends on this: only who runs its parts.
#pragma once

#include "cpu/platform/worker_pool.hpp"

namespace rh::cpu {

class LateWorkerPolicy {
public:
    static constexpr int kLateAwakeToFallBack = 2;
    static constexpr int kLateAsleepToFallBack = 8;
    static constexpr int kFirstSerialStretch = 4;
    static constexpr int kLongestSerialStretch = 1 << 20;

    // Whether the next split dispatch runs every part on the caller.
    bool serial_next() const noexcept { return always_serial_ || serial_left_ > 0; }

    // A split dispatch the caller ran alone; true when it was the stretch's
    // last (the caller may wake the workers for the probe that follows).
    bool ran_serially() noexcept {
        if (always_serial_ || serial_left_ == 0) return false;
        return --serial_left_ == 0;
    }

    // A split dispatch handed to the workers, and how it went.
    void handed_out(WorkerPool::Dispatch outcome) noexcept {
        const bool probe = probing_;
        probing_ = false;
        switch (outcome) {
            case WorkerPool::Dispatch::on_time: break;
            case WorkerPool::Dispatch::late_awake:
                ++late_;
                if (probe || ++late_awake_ >= kLateAwakeToFallBack) fall_back();
                break;
            case WorkerPool::Dispatch::late_asleep:
                ++late_;
                if (++late_asleep_ >= kLateAsleepToFallBack) fall_back();
                break;
        }
    }

    // For tests: every part on the caller from now on.
    void always_serial() noexcept { always_serial_ = true; }

    int late_dispatches() const noexcept { return late_; }
    int fallbacks() const noexcept { return fallbacks_; }

private:
    void fall_back() noexcept {
        serial_left_ = stretch_;
        if (stretch_ < kLongestSerialStretch) stretch_ *= 2;
        late_awake_ = late_asleep_ = 0;
        probing_ = true;
        ++fallbacks_;
    }

    bool always_serial_ = false;
    bool probing_ = false;
    int serial_left_ = 0;
    int stretch_ = kFirstSerialStretch;
    int late_awake_ = 0;   // since the last stretch
    int late_asleep_ = 0;  // since the last stretch
    int late_ = 0;         // every late dispatch of the update
    int fallbacks_ = 0;
};

}  // namespace rh::cpu

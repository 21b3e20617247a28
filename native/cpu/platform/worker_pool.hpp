// The fast path's own threads (docs/native-cpu.md, "Threads"): row ranges
// of one pass, or of one BLAS call made single-threaded, run on the caller
// plus up to `threads - 1` workers.
//
// * Workers spin briefly after a task (the next one of the same update
//   arrives within microseconds), then sleep on a futex (std::atomic::wait):
//   no core is left spinning after an update, unlike a BLAS pool whose idle
//   threads spin for ~0.1 s and slow down whatever runs next (NumPy too).
// * Parts are claimed, not assigned: the caller, done with part 0, runs any
//   part no worker has claimed yet, so a worker that is not running (its
//   core taken by another process's spinning threads) costs nothing; run()
//   reports when that happened, telling a worker that was awake and still
//   missed its part (a sign it lacks a core: the engine then stops
//   splitting for the rest of the update) from one that was asleep (it
//   only needs the wake-up that run() sends).
// * wake() lets the caller rouse sleeping workers ahead of the first
//   dispatch of an update, so the futex wake-up overlaps the update's own
//   preparation instead of costing the first passes their second thread.
// * Waking is steered away from the caller's CPU (Linux): the scheduler
//   places a woken thread on or near its waker's CPU, and a worker placed
//   behind the busy caller stays runnable without running while another
//   CPU idles (docs/native-cpu.md, "Threads"). The caller narrows sleeping workers' affinity to its other
//   CPUs before waking them; each worker restores the full set as soon as it
//   runs (a running thread does not move when its set widens).
//
// Started lazily (the only allocations), joined on destruction; run()
// allocates nothing. One pool per engine; run() is not reentrant.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <memory>
#include <thread>
#include <vector>

namespace rh::cpu {

class WorkerPool {
public:
    WorkerPool() = default;
    ~WorkerPool();
    WorkerPool(const WorkerPool&) = delete;
    WorkerPool& operator=(const WorkerPool&) = delete;

    enum class Dispatch {
        on_time,       // every part ran where it was meant to (or nothing was split)
        late_awake,    // the caller ran a part an awake worker did not claim in time
        late_asleep,   // the caller ran a part because the workers were asleep
    };

    // Runs task(part) for every part in [0, parts), part 0 on the calling
    // thread, and says whether the workers took their parts.
    template <class Task>
    Dispatch run(int parts, Task& task) {
        if (parts <= 1) {
            task(0);
            return Dispatch::on_time;
        }
        return dispatch(parts, &trampoline<Task>, &task);
    }

    // Wakes sleeping workers (no task): they start spinning for the next
    // dispatch. Costs nothing when none sleeps or none was started.
    void wake();

    // Test hook: while held, workers take no part (the caller runs them all
    // and reports the workers late, as when their cores are busy elsewhere).
    void hold_workers(bool held) noexcept { held_.store(held, std::memory_order_seq_cst); }

    int started_workers() const noexcept { return static_cast<int>(workers_.size()); }
    // Workers asleep on the futex now, how often a worker woke from it, and
    // the CPU the last one woke on (before it widened its CPU set again):
    // what a test can observe without timing anything.
    int sleeping_workers() const noexcept { return sleeping_.load(std::memory_order_seq_cst); }
    std::uint32_t wake_ups() const noexcept { return wake_ups_.load(std::memory_order_seq_cst); }
    int last_wake_cpu() const noexcept { return last_wake_cpu_.load(std::memory_order_seq_cst); }

private:
    template <class Task>
    static void trampoline(void* context, int part) {
        (*static_cast<Task*>(context))(part);
    }

    Dispatch dispatch(int parts, void (*function)(void*, int), void* context);
    void ensure_workers(int count);
    void worker_loop(std::atomic<int>& phase);
    // Claims the next part of generation `generation`; -1 when none is left.
    int claim(std::uint32_t generation);
    // Whether generation `generation` still has unclaimed parts.
    bool unclaimed(std::uint32_t generation) const;
    // Before waking sleeping workers (and after starting new ones): the
    // waiting workers' affinity without the caller's CPU (a running worker
    // is left alone: it restores the full set only between generations).
    void steer_sleepers();
    // In a worker: the affinity the caller had when it last steered.
    void restore_affinity() const;

    std::vector<std::thread> workers_;
    // Each worker's phase: kWaiting (between generations: steering may move
    // it), kRunning (claiming and running parts: never moved), kSteered (the
    // caller is moving it; the worker waits for kWaiting before it runs).
    static constexpr int kRunning = 0, kWaiting = 1, kSteered = 2;
    std::vector<std::unique_ptr<std::atomic<int>>> phases_;
    void (*function_)(void*, int) = nullptr;
    void* context_ = nullptr;
    // claim_ = generation << 32 | parts << 16 | next unclaimed part.
    std::atomic<std::uint64_t> claim_{0};
    std::atomic<std::uint32_t> generation_{0};
    std::atomic<int> done_{0};       // parts finished by workers in this generation
    std::atomic<int> sleeping_{0};   // workers inside the futex wait
    std::atomic<std::uint32_t> wake_ups_{0};
    std::atomic<int> last_wake_cpu_{-1};
    std::atomic<bool> stop_{false};
    std::atomic<bool> held_{false};
    std::atomic<std::uint32_t> steered_{0};      // steering rounds so far
    std::array<std::uint64_t, 16> full_affinity_{};  // the caller's CPU set (a cpu_set_t) at the first start
    bool steerable_ = false;                          // that set has two CPUs or more
};

}  // namespace rh::cpu

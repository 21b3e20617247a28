#include "cpu/platform/worker_pool.hpp"

#include <chrono>
#include <cstring>

#if defined(__linux__)
#include <pthread.h>
#include <sched.h>
#endif

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define RH_PAUSE() _mm_pause()
#else
#define RH_PAUSE() std::this_thread::yield()
#endif

namespace rh::cpu {

namespace {
// How long a worker spins for the next task before it sleeps: long enough to
// bridge the gaps between the passes of one update, short enough to free
// the core right after it.
constexpr auto kSpin = std::chrono::microseconds(200);

// Pauses (~20-70 cycles each) the caller waits for an awake worker to claim.
constexpr int kClaimGraceSpins = 64;

constexpr std::uint64_t pack(std::uint32_t generation, int parts, int next) {
    return (static_cast<std::uint64_t>(generation) << 32) | (static_cast<std::uint64_t>(parts) << 16) |
           static_cast<std::uint64_t>(next);
}
}  // namespace

WorkerPool::~WorkerPool() {
    if (workers_.empty()) return;
    stop_.store(true, std::memory_order_seq_cst);
    generation_.fetch_add(1, std::memory_order_seq_cst);
    generation_.notify_all();
    for (auto& worker : workers_) worker.join();
}

void WorkerPool::ensure_workers(int count) {
#if defined(__linux__)
    // The CPUs the workers may use (they inherit the caller's set), recorded
    // before the first one starts and never written again.
    if (workers_.empty() && count > 0) {
        static_assert(sizeof(cpu_set_t) <= sizeof(full_affinity_), "cpu_set_t does not fit");
        cpu_set_t allowed;
        steerable_ = sched_getaffinity(0, sizeof allowed, &allowed) == 0 && CPU_COUNT(&allowed) >= 2;
        std::memcpy(full_affinity_.data(), &allowed, sizeof allowed);
    }
#endif
    const bool starting = static_cast<int>(workers_.size()) < count;
    while (static_cast<int>(workers_.size()) < count) {
        std::atomic<int>& phase = *phases_.emplace_back(std::make_unique<std::atomic<int>>(kWaiting));
        workers_.emplace_back([this, &phase] { worker_loop(phase); });
    }
    if (starting) steer_sleepers();  // a new thread, too, starts beside its creator
}

int WorkerPool::claim(std::uint32_t generation) {
    std::uint64_t value = claim_.load(std::memory_order_acquire);
    for (;;) {
        if (static_cast<std::uint32_t>(value >> 32) != generation) return -1;
        const int parts = static_cast<int>((value >> 16) & 0xffff);
        const int next = static_cast<int>(value & 0xffff);
        if (next >= parts) return -1;
        if (claim_.compare_exchange_weak(value, value + 1, std::memory_order_acq_rel, std::memory_order_acquire))
            return next;
    }
}

bool WorkerPool::unclaimed(std::uint32_t generation) const {
    const std::uint64_t value = claim_.load(std::memory_order_acquire);
    return static_cast<std::uint32_t>(value >> 32) == generation &&
           static_cast<int>(value & 0xffff) < static_cast<int>((value >> 16) & 0xffff);
}

void WorkerPool::steer_sleepers() {
#if defined(__linux__)
    if (!steerable_) return;
    cpu_set_t elsewhere;
    std::memcpy(&elsewhere, full_affinity_.data(), sizeof elsewhere);
    const int here = sched_getcpu();
    if (here < 0 || !CPU_ISSET(here, &elsewhere)) return;
    CPU_CLR(here, &elsewhere);
    // Only waiting workers move; the round is counted before they may run
    // again, so each sees it and restores the full set before its parts.
    // Only this thread sets kSteered, so the workers in it are the ones moved
    // here: no list of them (this runs inside updates, which allocate nothing).
    for (std::size_t i = 0; i < workers_.size(); ++i) {
        int waiting = kWaiting;
        if (!phases_[i]->compare_exchange_strong(waiting, kSteered, std::memory_order_seq_cst)) continue;
        pthread_setaffinity_np(workers_[i].native_handle(), sizeof elsewhere, &elsewhere);
    }
    steered_.fetch_add(1, std::memory_order_seq_cst);
    for (auto& phase : phases_) {
        int steered = kSteered;
        phase->compare_exchange_strong(steered, kWaiting, std::memory_order_seq_cst);
    }
#endif
}

void WorkerPool::restore_affinity() const {
#if defined(__linux__)
    cpu_set_t allowed;
    std::memcpy(&allowed, full_affinity_.data(), sizeof allowed);
    pthread_setaffinity_np(pthread_self(), sizeof allowed, &allowed);
#endif
}

void WorkerPool::wake() {
    if (workers_.empty() || sleeping_.load(std::memory_order_seq_cst) == 0) return;
    steer_sleepers();
    // A new generation with nothing to claim (claim_ keeps the old one):
    // woken workers find no part and spin.
    generation_.fetch_add(1, std::memory_order_seq_cst);
    generation_.notify_all();
}

WorkerPool::Dispatch WorkerPool::dispatch(int parts, void (*function)(void*, int), void* context) {
    ensure_workers(parts - 1);
    const std::uint32_t generation = generation_.load(std::memory_order_relaxed) + 1;
    function_ = function;
    context_ = context;
    done_.store(0, std::memory_order_relaxed);
    claim_.store(pack(generation, parts, 1), std::memory_order_release);
    generation_.store(generation, std::memory_order_seq_cst);
    const bool asleep = sleeping_.load(std::memory_order_seq_cst) > 0;
    if (asleep) {
        steer_sleepers();
        generation_.notify_all();
    }

    function(context, 0);
    // An awake worker claims its part within about a microsecond of the
    // dispatch; a part of a short pass can take little more than that, so
    // the caller gives it that grace before taking the part itself (and
    // reporting the worker late). A sleeping worker gets none: it needs a
    // futex wake-up first.
    if (!asleep)
        for (int spins = 0; spins < kClaimGraceSpins && unclaimed(generation); ++spins) RH_PAUSE();
    // Parts no worker has claimed yet run here.
    int by_caller = 0;
    for (int part = claim(generation); part >= 0; part = claim(generation)) {
        function(context, part);
        ++by_caller;
    }
    // Wait for the parts the workers claimed (they are running).
    const int by_workers = parts - 1 - by_caller;
    for (int spins = 0; done_.load(std::memory_order_acquire) < by_workers; ++spins) {
        if (spins < 4096) RH_PAUSE();
        else std::this_thread::yield();  // a worker sharing this core gets it
    }
    if (by_caller == 0) return Dispatch::on_time;
    return asleep ? Dispatch::late_asleep : Dispatch::late_awake;
}

void WorkerPool::worker_loop(std::atomic<int>& phase) {
    std::uint32_t seen = 0, steering_seen = 0;
    for (;;) {
        phase.store(kWaiting, std::memory_order_seq_cst);
        const auto start = std::chrono::steady_clock::now();
        int spins = 0;
        std::uint32_t now = generation_.load(std::memory_order_acquire);
        while (now == seen) {
            if (++spins % 64 == 0 && std::chrono::steady_clock::now() - start > kSpin) {
                sleeping_.fetch_add(1, std::memory_order_seq_cst);
                if (generation_.load(std::memory_order_seq_cst) == seen) generation_.wait(seen, std::memory_order_seq_cst);
#if defined(__linux__)
                last_wake_cpu_.store(sched_getcpu(), std::memory_order_seq_cst);
#endif
                // Awake before the wake-up counts: whoever sees the count
                // move (the tests waiting for a worker to wake, then for it
                // to sleep again) no longer counts this worker asleep.
                sleeping_.fetch_sub(1, std::memory_order_seq_cst);
                wake_ups_.fetch_add(1, std::memory_order_seq_cst);
            } else {
                RH_PAUSE();
            }
            now = generation_.load(std::memory_order_acquire);
        }
        seen = now;
        if (stop_.load(std::memory_order_acquire)) return;
        if (held_.load(std::memory_order_acquire)) continue;
        for (int waiting = kWaiting; !phase.compare_exchange_weak(waiting, kRunning, std::memory_order_seq_cst);
             waiting = kWaiting)
            RH_PAUSE();  // the caller is moving this worker: wait until it is done
        if (const std::uint32_t steering = steered_.load(std::memory_order_acquire); steering != steering_seen) {
            steering_seen = steering;
            restore_affinity();  // running now, away from the caller: the full set again
        }
        for (int part = claim(seen); part >= 0; part = claim(seen)) {
            function_(context_, part);
            done_.fetch_add(1, std::memory_order_acq_rel);
        }
    }
}

}  // namespace rh::cpu

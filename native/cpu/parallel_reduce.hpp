// The fast path's one pattern of parallel work: split the rows of a batch
// into a fixed partition, run each part (on the engine's WorkerPool), and
// combine the parts' results in part order. The partition depends only on
// the thread count the update started with and the batch shape, and the
// combination order only on the partition, so a result is bit for bit the
// same whoever ran which part: n_jobs fixes the bits, not the scheduler.
#pragma once

#include <algorithm>
#include <cstdint>

#include "cpu/platform/late_worker_policy.hpp"
#include "cpu/platform/worker_pool.hpp"

namespace rh::cpu {

// Parts of a split pass at most; a part must hold at least this much work
// (elements of X for the row passes, multiply-adds for a Gram) before a
// pass is split: below it the dispatch costs more than it saves (measured,
// docs/native-cpu.md).
inline constexpr int kMaxParts = 64;
inline constexpr std::int64_t kParallelProductElements = std::int64_t{1} << 15;
inline constexpr std::int64_t kParallelGramFlops = std::int64_t{1} << 19;

inline int parts_for(int threads, std::int64_t work, std::int64_t per_part) {
    if (threads <= 1) return 1;
    const std::int64_t parts = std::min<std::int64_t>({threads, work / per_part, kMaxParts});
    return parts < 2 ? 1 : static_cast<int>(parts);
}

// The parts of the passes over rows: every O(n) pass splits rows like the
// passes over X, so each thread touches the rows (and their r, s, c) it
// already holds in its cache (a serial pass after a parallel one would pull
// the other core's half of every row-sized buffer across).
inline int row_parts(int threads, std::int64_t rows, std::int64_t features) {
    return parts_for(threads, rows * std::max<std::int64_t>(features, 1), kParallelProductElements);
}

// Rows [begin, end) of part `part` of `parts` over n rows (edges at
// multiples of 16 rows).
struct RowRange {
    std::int64_t begin = 0;
    std::int64_t end = 0;
    std::int64_t size() const noexcept { return end - begin; }
};

inline RowRange part_rows(int part, int parts, std::int64_t n) {
    auto edge = [&](int k) {
        if (k >= parts) return n;
        const std::int64_t e = (n * k / parts) & ~std::int64_t{15};
        return std::min(e, n);
    };
    return {edge(part), edge(part + 1)};
}

// Runs the parts of one update on a pool; late_worker_policy.hpp decides
// when the caller runs every part itself instead (for a stretch of
// dispatches after workers missed theirs). The partition stays the one the
// thread count fixed, so the result does not change with who runs a part.
class PartRunner {
public:
    // pool == nullptr: every pass runs in one part.
    PartRunner(WorkerPool* pool, int threads) : pool_(pool), threads_(threads) {}

    int threads() const noexcept { return threads_; }
    int parts_for(std::int64_t work, std::int64_t per_part) const {
        return pool_ == nullptr ? 1 : rh::cpu::parts_for(threads_, work, per_part);
    }
    int row_parts(std::int64_t rows, std::int64_t features) const {
        return pool_ == nullptr ? 1 : rh::cpu::row_parts(threads_, rows, features);
    }

    // task(part) for every part in [0, parts).
    template <class Task>
    void run(int parts, Task& task) {
        if (parts <= 1) {
            task(0);
            return;
        }
        ++dispatches_;
        if (policy_.serial_next()) {
            for (int part = 0; part < parts; ++part) task(part);
            if (policy_.ran_serially()) pool_->wake();  // awake for the probe that follows
            return;
        }
        policy_.handed_out(pool_->run(parts, task));
    }

    int dispatches() const noexcept { return dispatches_; }
    int late_dispatches() const noexcept { return policy_.late_dispatches(); }
    // Whether the update ended inside such a stretch.
    bool serial() const noexcept { return policy_.serial_next(); }
    // For tests: every part on the calling thread from now on.
    void run_serially() noexcept { policy_.always_serial(); }

private:
    WorkerPool* pool_;
    int threads_;
    LateWorkerPolicy policy_;
    int dispatches_ = 0;
};

// part(k, rows) for every part k of the partition of [0, n) into `parts`.
template <class Part>
void for_each_part(PartRunner& runner, int parts, std::int64_t n, Part&& part) {
    auto task = [&](int k) { part(k, part_rows(k, parts, n)); };
    runner.run(parts, task);
}

// The parts' results of part(k, rows) added in part order, starting from
// Result{} (the sum of one part is 0 + that part, as it has always been).
template <class Result, class Part>
Result parallel_reduce(PartRunner& runner, int parts, std::int64_t n, Part&& part) {
    Result partial[kMaxParts];
    for_each_part(runner, parts, n, [&](int k, RowRange rows) { partial[k] = part(k, rows); });
    Result total{};
    for (int k = 0; k < parts; ++k) total += partial[k];
    return total;
}

}  // namespace rh::cpu

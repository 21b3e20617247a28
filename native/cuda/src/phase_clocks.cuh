// Where one launch of the block solver spends its time, for profiling
// builds only (RH_BLOCK_PHASE_CLOCKS defined, as
// scripts/profiling/block_solver_phases.sh builds the engine): thread 0 of
// block 0 reads clock64 around each phase of the passes and the d-sized work
// (it waits at the phase's barriers like every thread, so a phase's cycles
// are the block's wall time in it) and prints one line of totals, prefixed
// "RH_PHASES ", when the launch ends. In every other build the clocks are
// empty structs whose calls compile to nothing: the engine's code and bits
// are the same with and without them.
#pragma once

#include <cstdint>
#include <cstdio>

namespace rh::cuda {

enum class Phase : int {
    residual_rows,  // r = y - Z point and the loss, this thread's rows
    residual_sum,   // the loss over the block and the grid (a grid barrier)
    score_rows,     // s and c from r, this block's tiles
    gram_tiles,     // the Gram's entries and Z' s from this block's tiles
    gram_sum,       // the partials over the grid into every block's slice (two grid barriers)
    system,         // the Newton system from the Gram
    cholesky,       // the Cholesky rung: factor, inverse, rcond, step
    value_check,    // the batch's NaNs and infinities counted over the grid (a grid barrier)
    memory,         // the memory part of f at a point (a value_at's d-sized work, two block sums)
    gradient,       // grad f from Z' s (the d-sized work after a gradient's pass, two block barriers)
    handoff,        // the driver warp posts a command: the point into the mailbox, the handoff barrier
    driver_reads,   // the driver warp copies the block's step or gradient into its own vectors
    driver_sums,    // the driver's dot products and norms (index order, each lane on its own copy)
    command_end,    // the block barrier that ends every command (the block's warps catching up)
    count
};

#if defined(RH_BLOCK_PHASE_CLOCKS) && defined(__CUDACC__)

inline constexpr int kPhaseCount = static_cast<int>(Phase::count);

// The phases' names in the report, in Phase's order (the profiling
// script's keys).
__device__ inline const char* phase_name(int k) {
    const char* const names[] = {"residual_rows", "residual_sum", "score_rows",  "gram_tiles", "gram_sum",
                                 "system",        "cholesky",     "value_check", "memory",     "gradient",
                                 "handoff",       "driver_reads", "driver_sums", "command_end"};
    static_assert(sizeof(names) / sizeof(names[0]) == kPhaseCount, "a name for every phase");
    return names[k];
}

// The SM's cycle counter (clock64 exists in the device pass only).
__device__ inline long long phase_clock() {
#if defined(__CUDA_ARCH__)
    return clock64();
#else
    return 0;
#endif
}

struct PhaseClocks {
    long long cycles[kPhaseCount] = {};
    int entries[kPhaseCount] = {};
    long long begin = 0, solved = 0, solved_phases = 0;

    __device__ static bool recorder() { return blockIdx.x == 0 && threadIdx.x == 0; }
    __device__ void start() {
        if (recorder()) begin = phase_clock();
    }
    __device__ long long phase_total() const {
        long long total = 0;
        for (int k = 0; k < kPhaseCount; ++k) total += cycles[k];
        return total;
    }
    // The driver returned: what follows is the batch's closing.
    __device__ void driver_done() {
        if (!recorder()) return;
        solved = phase_clock() - begin;
        solved_phases = phase_total();
    }
    // One line: the launch's shape, its cycles, each phase's cycles and
    // entries (the closing's passes included), the driver's own cycles.
    __device__ void report(std::int64_t rows, std::int64_t d, int element_bytes, int l1, int blocks,
                           int iterations) const {
        if (!recorder()) return;
        const long long total = phase_clock() - begin;
        printf("RH_PHASES {\"rows\": %lld, \"d\": %lld, \"element_bytes\": %d, \"l1\": %d, \"blocks\": %d, "
               "\"iterations\": %d, \"total\": %lld, \"solve\": %lld, \"driver_own\": %lld, \"closing\": %lld",
               static_cast<long long>(rows), static_cast<long long>(d), element_bytes, l1, blocks, iterations, total,
               solved, solved - solved_phases, total - solved);
        for (int k = 0; k < kPhaseCount; ++k) printf(", \"%s\": [%lld, %d]", phase_name(k), cycles[k], entries[k]);
        printf("}\n");
    }
};

// Times its scope as `phase` (thread 0 of block 0 only).
class PhaseTimer {
public:
    __device__ PhaseTimer(PhaseClocks& clocks, Phase phase)
        : clocks_(clocks), phase_(static_cast<int>(phase)), begin_(PhaseClocks::recorder() ? phase_clock() : 0) {}
    __device__ ~PhaseTimer() {
        if (!PhaseClocks::recorder()) return;
        clocks_.cycles[phase_] += phase_clock() - begin_;
        ++clocks_.entries[phase_];
    }
    PhaseTimer(const PhaseTimer&) = delete;
    PhaseTimer& operator=(const PhaseTimer&) = delete;

private:
    PhaseClocks& clocks_;
    int phase_;
    long long begin_;
};

#else

struct PhaseClocks {
    __host__ __device__ void start() {}
    __host__ __device__ void driver_done() {}
    __host__ __device__ void report(std::int64_t, std::int64_t, int, int, int, int) const {}
};

class PhaseTimer {
public:
    __host__ __device__ PhaseTimer(PhaseClocks&, Phase) {}
    PhaseTimer(const PhaseTimer&) = delete;
    PhaseTimer& operator=(const PhaseTimer&) = delete;
};

#endif

}  // namespace rh::cuda

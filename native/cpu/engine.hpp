// The CPU engine: one renewable Huber update (ALGORITHM.md) per call, for
// one dtype. The engine owns only buffers and threads; the caller owns the
// state, so it passes the previous state in and receives the next one in
// separate buffers, and an error leaves its state untouched.
//
// An update is check (every input, before anything is written), prepare
// (the batch's weights, schedules and surrogate terms), solve (the core's
// damped-Newton or LAMM driver over one of two evaluators: reference order
// or fast, kernel_choice.hpp) and close (the information update and the
// next state's counters).
#pragma once

#include <cstdint>
#include <vector>

#include "core/batch_view.hpp"
#include "core/driver_buffers.hpp"
#include "core/solver_result.hpp"
#include "core/solver_config.hpp"
#include "core/state_view.hpp"
#include "cpu/buffer_growth.hpp"
#include "cpu/cpu_diagnostics.hpp"
#include "cpu/fast/fast_buffers.hpp"
#include "cpu/fast/lamm_evaluator.hpp"
#include "cpu/fast/problem.hpp"
#include "cpu/kernel_choice.hpp"
#include "cpu/partition_sums.hpp"
#include "cpu/platform/thread_policy.hpp"
#include "cpu/platform/worker_pool.hpp"
#include "cpu/reference/reference_buffers.hpp"
#include "cpu/solve_ladder.hpp"
#include "cpu/test_hooks.hpp"

namespace rh::cpu {

template <class T>
class Engine {
public:
    explicit Engine(int n_jobs = kLibraryDefaultThreads, KernelChoice kernel = KernelChoice::automatic)
        : threads_(n_jobs), kernel_(kernel) {}

    // Absorbs `batch` into `state`, writing the next state into `next`
    // (coefficients d, information d x d; may not alias the inputs). Every
    // input is checked before anything is written; errors throw
    // core::EngineError.
    CpuUpdateDiagnostics update(const core::StateView<T>& state, const core::BatchView<T>& batch,
                                const core::SolverConfig& config, core::StateOutput<T>& next);

    // A partition's share of a batch's data terms at `point`
    // (partition_sums.hpp). `design` is the partition's Z (rows x d, the
    // intercept column included by the caller), with y and optional weights
    // checked as update() checks a batch, except that the weights may sum to
    // zero (another partition may carry the batch's weight). Threads: the
    // BLAS pool at n_jobs, as the reference-order path runs. Errors throw
    // core::EngineError before any output is written.
    void partition_sums(const core::BatchView<T>& design, const PartitionSumsPoint<T>& point,
                        const PartitionSumsRequest& request, PartitionSumsOutput<T>& out);

    // Whether every value of X (rows x features, row-major) is finite: the
    // test update() makes, split over the threads like the fast path's row
    // passes, so each thread leaves in its cache the rows it works on next.
    bool rows_finite(const T* X, std::int64_t rows, std::int64_t features);

    // out = X coef[:p] (+ coef[p] with an intercept), X rows x p row-major.
    void predict(const T* coefficients, std::int64_t features, bool fit_intercept, const T* X, std::int64_t rows,
                 T* out) const;

    int threads() const { return threads_.threads(); }
    KernelChoice kernel() const noexcept { return kernel_; }
    const ThreadPolicy& thread_policy() const noexcept { return threads_; }
    std::int64_t workspace_allocations() const noexcept { return growth_.events(); }
    int started_workers() const noexcept { return pool_.started_workers(); }
    int sleeping_workers() const noexcept { return pool_.sleeping_workers(); }

    // The fast path's shortcuts (each changes no bit; tests switch them off
    // to prove it) and how often they served in the last l1 update.
    fast::FastOptions& fast_options() noexcept { return fast_options_; }
    const fast::LammShortcuts& last_lamm_shortcuts() const noexcept { return last_shortcuts_; }

    // Test hooks (test_hooks.hpp): a point inside every update, the n-th
    // workspace allocation from now failing, the pool's workers kept from
    // their parts (the calling thread then runs them, as under contention).
    EngineTestHooks& test_hooks() noexcept { return test_hooks_; }
    void fail_nth_allocation(std::int64_t n) noexcept { growth_.fail_growth(n); }
    void hold_workers(bool held) noexcept { pool_.hold_workers(held); }

private:
    // The batch's terms every solver needs (prepare()).
    struct BatchTerms {
        const T* weights = nullptr;
        double weight_sum_before = 0.0;
        double weight_sum_after = 0.0;
        double bandwidth = 0.0;
        double lambda_value = 0.0;
        bool uses_history = false;
        double history_coefficient = 0.0;
    };

    // Refuses a `what` ("batch", "partition") whose rows x d or d x d exceed
    // the 32-bit BLAS interface.
    static void check_blas_sizes(std::int64_t rows, std::int64_t d, const char* what, const char* plural);
    // unit_weights_ holds at least `rows` ones (the weights when none are given).
    void reserve_unit_weights(std::int64_t rows);
    KernelPath check(const core::StateView<T>& state, const core::BatchView<T>& batch,
                     const core::SolverConfig& config, const core::StateOutput<T>& next);
    BatchTerms prepare(const core::StateView<T>& state, const core::BatchView<T>& batch,
                       const core::SolverConfig& config);
    // Each solves the batch and closes it: J_new into next.information, and
    // S_new into next.meat when the state tracks the meat.
    core::SolverResult<T> solve_fast(const core::StateView<T>& state, const core::BatchView<T>& batch,
                                     const core::SolverConfig& config, const BatchTerms& terms, int threads,
                                     const core::StateOutput<T>& next, CpuUpdateDiagnostics& diagnostics);
    core::SolverResult<T> solve_reference(const core::StateView<T>& state, const core::BatchView<T>& batch,
                                          const core::SolverConfig& config, const BatchTerms& terms,
                                          const core::StateOutput<T>& next, CpuUpdateDiagnostics& diagnostics);
    // rows_finite on `threads` threads; with `panels` each thread also
    // builds its rows' column panels in the same read of X (the narrow fast
    // path's test and its panels together).
    bool scan_rows(int threads, const T* X, std::int64_t rows, std::int64_t features, T* panels);
    core::DriverBuffers<T> driver_buffers() {
        return {theta_.data(), candidate_.data(), step_.data(), gradient_.data(), previous_.data(),
                extrapolated_.data()};
    }

    ThreadPolicy threads_;
    KernelChoice kernel_;
    BufferGrowth growth_;
    // The drivers' vectors, the penalty mask and history direction (d), and
    // unit weights (n) when sample_weight is absent.
    std::vector<T> theta_, candidate_, step_, gradient_, previous_, extrapolated_, penalty_mask_, history_direction_;
    StaggeredVector<T> unit_weights_;
    reference::ReferenceBuffers<T> reference_buffers_;
    fast::FastBuffers<T> fast_buffers_;
    SolveLadder<T> ladder_;
    fast::FastOptions fast_options_;
    fast::LammShortcuts last_shortcuts_;
    WorkerPool pool_;  // the fast path's row-parallel passes (started on first use)
    EngineTestHooks test_hooks_;
};

extern template class Engine<float>;
extern template class Engine<double>;

}  // namespace rh::cpu

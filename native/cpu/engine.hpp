// The CPU engine: one renewable Huber update (ALGORITHM.md) per call, for
// one dtype. The engine owns only workspaces; the caller owns the state, so
// it passes the previous state in and receives the next one in separate
// buffers, and an error leaves its state untouched.
#pragma once

#include <cstdint>

#include "core/batch_view.hpp"
#include "core/diagnostics.hpp"
#include "core/solver_config.hpp"
#include "core/state_view.hpp"
#include "cpu/kernel_choice.hpp"
#include "cpu/thread_policy.hpp"
#include "cpu/worker_pool.hpp"
#include "cpu/workspace.hpp"

namespace rh::cpu {

template <class T>
class Engine {
public:
    explicit Engine(int n_jobs = kLibraryDefaultThreads, KernelChoice kernel = KernelChoice::automatic)
        : threads_(n_jobs), kernel_(kernel) {}

    // Absorbs `batch` into `state`, writing the next state into `next`
    // (coefficients d, information d x d; may not alias the inputs).
    // Every input is checked before anything is written; errors throw
    // core::EngineError.
    core::UpdateDiagnostics update(const core::StateView<T>& state, const core::BatchView<T>& batch,
                                   const core::SolverConfig& config, core::StateOutput<T>& next);

    // Whether every value of X (rows x features, row-major) is finite: the
    // test update() makes, split over the threads like the fast path's row
    // passes, so each thread leaves in its cache the rows it works on next
    // (a test on one thread would leave every row in one core's cache, and
    // the other core would fetch its half from there).
    bool rows_finite(const T* X, std::int64_t rows, std::int64_t features);

    // out = X coef[:p] (+ coef[p] with an intercept), X rows x p row-major.
    void predict(const T* coefficients, std::int64_t features, bool fit_intercept, const T* X, std::int64_t rows,
                 T* out) const;

    int threads() const { return threads_.threads(); }
    KernelChoice kernel() const noexcept { return kernel_; }
    const ThreadPolicy& thread_policy() const noexcept { return threads_; }
    std::int64_t workspace_allocations() const noexcept { return workspace_.allocation_events(); }
    int started_workers() const noexcept { return pool_.started_workers(); }

private:
    // rows_finite on `threads` threads (update() passes the count it took
    // before it sized the BLAS pool for the call: with n_jobs=None the
    // count is read from that pool). With `panels` (narrow_panel_size
    // elements, p <= narrow_pass_max_features) each thread also builds its
    // rows' column panels in the same read of X: the narrow fast path's
    // test and its panels together.
    bool scan_rows(int threads, const T* X, std::int64_t rows, std::int64_t features, T* panels);
    // Coefficients from the workspace and the counters of the next state.
    void finish(const core::StateView<T>& state, core::StateOutput<T>& next, std::int64_t rows, double lambda,
                double weight_sum_after) const;

    ThreadPolicy threads_;
    KernelChoice kernel_;
    Workspace<T> workspace_;
    WorkerPool pool_;  // the fast path's row-parallel passes (started on first use)
};

extern template class Engine<float>;
extern template class Engine<double>;

}  // namespace rh::cpu

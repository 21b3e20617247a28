// The solve of the batches the block solver (block_solver.cuh) does not
// serve, or whose system its Cholesky rung refused (update.cu chooses):
// core's own drivers on the host, core::damped_newton for penalty "none"
// and core::lamm for "l1", over evaluators whose passes run on the device
// (driven_evaluators.cuh), then the batch's closing. Every decision of the
// solve (the line search, the majorizer's step, LAMM's trials and
// acceleration, convergence) is core's; the engine supplies the passes.
//
// Host synchronizations: one per Newton direction (its search's trials come
// with it, the first direction with the starting point's f; a refused
// Cholesky rung and the majorizer's doublings add theirs), one per LAMM
// iteration (its gradient and its first kLammTrialsPerPass trials, with the
// point's f when the driver jumped there) and one per further pass of
// trials; none at the end (the closing runs on in stream order; update.cu
// waits only for a caller's device batch). A batch of unit weights has its
// value check judged after the first of these (DevicePasses::wait).
#include <algorithm>

#include "core/lamm_driver.hpp"
#include "core/newton_driver.hpp"
#include "core/solver_rules.hpp"
#include "core/surrogate_terms.hpp"
#include "cuda_engine.cuh"
#include "driven_evaluators.cuh"
#include "gram_kernels.cuh"
#include "row_products.cuh"

namespace rh::cuda {

template <class T>
SurrogateTerms<T> CudaEngine<T>::terms(const core::SolverConfig& config, double weight_sum_after) const {
    SurrogateTerms<T> t;
    t.d = d_;
    t.p = p_;
    t.intercept = intercept_;
    t.theta_prev = ws_.theta_current.data();
    t.information = ws_.J_current.data();
    t.history = ws_.history.data();
    t.uses_history = core::uses_history(config, counters_);
    t.history_coefficient = core::history_coefficient(counters_.weight_sum, weight_sum_after, counters_.previous_lambda);
    t.weight_sum = weight_sum_after;
    t.ridge = static_cast<T>(config.ridge);
    return t;
}

template <class T>
DevicePasses<T> CudaEngine<T>::passes(const StagedBatch<T>& batch, const SurrogateTerms<T>& terms,
                                      const core::SolverConfig& config, double h) {
    return DevicePasses<T>{stream_,  blas_,     solver_handle_, ws_,
                           solver_,  exchange_, batch,          terms,
                           static_cast<T>(config.tau), static_cast<T>(h), update_syncs_,
                           deferred_check_};
}

template <class T>
typename CudaEngine<T>::SolveOutcome CudaEngine<T>::solve_on_host(const StagedBatch<T>& batch,
                                                                  const StagedBatch<T>& closing_batch,
                                                                  const SurrogateTerms<T>& terms,
                                                                  const core::SolverConfig& config, double h,
                                                                  double lambda_value,
                                                                  core::UpdateDiagnostics& diagnostics) {
    DevicePasses<T> device = passes(batch, terms, config, h);
    device.send_constants();
    // A Newton direction on the narrow route reads everything that changes
    // between batches from the constants just sent: its graph is reused by
    // every batch of the same key (graph_replay.cuh), with or without
    // cuda_graphs, which adds the sequences captured a batch.
    const bool narrow = narrow_route();
    newton_graph_.new_batch(narrow ? std::optional<GraphKey>(graph_key(batch)) : std::nullopt);
    lamm_gradient_graph_.new_batch();
    lamm_trial_graph_.new_batch();
    T* v = driver_vectors_.data();
    const core::DriverBuffers<T> buffers{v, v + d_, v + 2 * d_, v + 3 * d_, v + 4 * d_, v + 5 * d_};
    core::SolverResult<T> result;
    if (config.penalty == core::Penalty::l1) {
        DeviceLammEvaluator<T> evaluator(device, lambda_value, graph(lamm_gradient_graph_), graph(lamm_trial_graph_),
                                         v + 6 * d_);
        const T* mask = host_terms_.get();
        result = core::lamm(evaluator, d_, host_theta_.data(), mask, lambda_value, config.max_iter, config.tol, buffers);
        evaluator.finish(result.theta);
    } else {
        DeviceNewtonEvaluator<T> evaluator(device, narrow ? &newton_graph_ : graph(newton_graph_), v + 6 * d_);
        result = core::damped_newton(evaluator, d_, host_theta_.data(), config.max_iter, config.tol, buffers,
                                     diagnostics);
        evaluator.finish(result.theta);
    }
    // The last of the solve's reads of the batch is queued: a copy of a
    // caller's device batch is joined, the point after it marked (update.cu
    // waits for it instead of the whole stream), and the closing reads the copy.
    if (copying_) {
        caller_copy_.join(stream_);
        RH_CUDA_CHECK(cudaEventRecord(caller_released_.event(), stream_));
    }
    passes(closing_batch, terms, config, h).close();
    std::copy(result.theta, result.theta + d_, host_theta_next_.begin());
    // The closing is not waited for: the state's buffers it writes are read
    // in stream order by whatever comes next (update.cu waits only for a
    // caller's device batch). A batch whose value check no read-back has
    // judged yet (a solve that read nothing) is judged here, before the commit.
    if (deferred_check_.pending()) device.wait();
    return {result.iterations, result.converged, result.reason, result.objective};
}

template <class T>
bool CudaEngine<T>::narrow_route() const {
    return d_ <= kNarrowGram && p_ <= kRowProductColumns;
}

template class CudaEngine<float>;
template class CudaEngine<double>;

}  // namespace rh::cuda

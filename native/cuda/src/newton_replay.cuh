// A Newton solve driven on the device (device_driven_solve.cu): core's own
// core::damped_newton runs in one device thread after every direction the
// passes formed, and stops where it asks for the next one; that request
// (the point and the residual's pending move) is what the next direction's
// launches read. The loop of directions and replays is a CUDA graph's while
// node (newton_loop_graph.cuh), so a batch's solve takes no host round
// trip: the host reads the outcome once.
//
// Each replay resumes where the last one stopped, not from the batch's
// start: between its iterations the driver carries only its point, f there
// and `certify` (newton_driver.hpp), which is false on every path this loop
// serves (a least-squares step, the one that sets it, is the host route's),
// so a driver started at the point where direction k was formed, with f
// there and k - 1 of its iterations spent, decides as the driver that ran
// the k - 1 before (test_newton_replay.cu checks it against the driver run
// straight through). A replay is then one iteration's work.
//
// The replay answers as the host-driven evaluator (DeviceNewtonEvaluator,
// driven_evaluators.cuh) answers from the same record, so the driver makes
// the same decisions on the same values: the same bits. What only the host
// route serves (a system the Cholesky rung refused, the majorizer's step
// and its doublings) ends the loop with `needs_host`, and the batch is
// solved again by the host-driven route.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "core/diagnostics.hpp"
#include "core/driver_buffers.hpp"
#include "core/host_device.hpp"
#include "core/newton_driver.hpp"
#include "core/search_steps.hpp"
#include "core/vector_sums.hpp"
#include "huber_kernels.cuh"
#include "objective.cuh"

namespace rh::cuda {

// A CUDA graph's conditional handle (CUDA 12.3 and later: conditional
// nodes); before that the loop is never made (newton_loop_graph.cu) and the
// handle is a plain integer, 0.
#if CUDART_VERSION >= 12030
using LoopCondition = cudaGraphConditionalHandle;
#else
using LoopCondition = unsigned long long;
#endif

enum class LoopStatus : int { running = 0, finished = 1, needs_host = 2 };

// The loop's control (written by the host before it), progress and outcome
// (read by the host after it), in device memory and a pinned copy.
struct DeviceNewtonLoop {
    int max_iter = 0;
    double tol = 0.0;
    int consumed = 0;    // the directions the driver has taken so far (its iterations spent)
    double value = 0.0;  // f at the point the next direction is formed at (after the first)
    LoopStatus status = LoopStatus::running;
    int iterations = 0;
    int converged = 0;
    core::StopReason reason = core::StopReason::converged;
    double objective = 0.0;
    core::UpdateDiagnostics diagnostics;  // the routes of the directions consumed, then the batch's
};

// The evaluator a replay runs the driver over: f at its starting point
// (`start_value`), then the one direction the device formed there
// (`record`, `step`: d), answered from the record; the driver's next
// direction is a request: its point goes to `point_out` and the accepted
// move to `inputs`; from then on (as after anything only the host serves)
// every direction is a zero step, on which the driver stops at once.
template <class T>
class ReplayedNewtonEvaluator {
public:
    RH_HOST_DEVICE ReplayedNewtonEvaluator(const PassRecord& record, const T* step, std::int64_t d,
                                           double weight_sum, double start_value, T* point_out,
                                           PassInputs* inputs)
        : record_(record),
          step_(step),
          d_(d),
          weight_sum_(weight_sum),
          start_value_(start_value),
          point_out_(point_out),
          inputs_(inputs) {}

    RH_HOST_DEVICE double start(const T*) const { return start_value_; }

    RH_HOST_DEVICE core::SolveRoute direction(const T* theta, T* step) {
        if (stopped_) return zero(step);
        if (taken_) {  // the next direction to form: at theta, the accepted move still to apply
            for (std::int64_t j = 0; j < d_; ++j) point_out_[j] = theta[j];
            inputs_->t = pending_t_;
            inputs_->trial = -1;
            requested_ = true;
            return zero(step);
        }
        taken_ = true;
        // Only the Cholesky rung's step is taken here: the driver's `certify`
        // (set after a least-squares step) then stays false, which resuming
        // it between replays relies on. Any other rung is the host's.
        if (record_.system.step_ok == 0) {  // the ladder's next rungs: the host's
            needs_host_ = true;
            return zero(step);
        }
        for (std::int64_t j = 0; j < d_; ++j) step[j] = step_[j];
        return core::SolveRoute::cholesky;
    }

    RH_HOST_DEVICE core::SolveRoute majorizer_direction(const T*, T* step) {
        needs_host_ = true;
        return zero(step);
    }

    RH_HOST_DEVICE double trial(double t, const T*, double value, const core::SearchSteps<T>& steps) {
        if (stopped_ || steps.kind != core::SearchSteps<T>::Kind::halving) {
            needs_host_ = needs_host_ || !stopped_;  // a doubling: its pass is the host route's
            stopped_ = true;
            return value + 1.0;
        }
        return data_term(t) + record_.along.at(t);
    }

    RH_HOST_DEVICE double accept(double t, const T*, double) {
        pending_t_ = t;
        accepted_value_ = data_term(t) + record_.memory[pass_slot(t)];
        return accepted_value_;
    }

    RH_HOST_DEVICE double norm(const T* x) const { return core::index_order_norm(d_, x); }

    // After the driver returned: it asked for a direction not yet formed; it
    // needs what only the host serves; the accepted move (the next scoring
    // pass applies it) and f at the accepted point.
    RH_HOST_DEVICE bool requested() const { return requested_ && !needs_host_; }
    RH_HOST_DEVICE bool needs_host() const { return needs_host_; }
    RH_HOST_DEVICE double pending_t() const { return pending_t_; }
    RH_HOST_DEVICE double accepted_value() const { return accepted_value_; }

private:
    RH_HOST_DEVICE core::SolveRoute zero(T* step) {
        stopped_ = true;
        for (std::int64_t j = 0; j < d_; ++j) step[j] = T(0);
        return core::SolveRoute::cholesky;
    }
    RH_HOST_DEVICE double data_term(double t) const { return record_.losses[pass_slot(t)] / weight_sum_; }

    const PassRecord& record_;
    const T* step_;
    std::int64_t d_;
    double weight_sum_, start_value_;
    T* point_out_;
    PassInputs* inputs_;
    double pending_t_ = 0.0, accepted_value_ = 0.0;
    bool taken_ = false, stopped_ = false, requested_ = false, needs_host_ = false;
};

// One replay of the driver from the point direction `loop.consumed + 1`
// was formed at (`point`, d), over that direction (`record`, `step`), with
// f there `value` (for the first direction the record's point pass gives
// it) and `loop.consumed` iterations spent: the loop's progress, or its
// outcome, into `loop`; a request's point into `point_out` and its move
// into `inputs`, or theta_hat and the closing's move. Returns whether the
// driver asks for another direction. Host and device (the kernel's thread
// 0 calls it over shared memory; test_newton_replay.cu on the host).
RH_EXEC_CHECK_DISABLE
template <class T>
RH_HOST_DEVICE bool replay_direction(DeviceNewtonLoop& loop, const PassRecord& record, const T* step,
                                     const T* point, std::int64_t d, double weight_sum, T* vectors, T* point_out,
                                     PassInputs* inputs) {
    const int spent = loop.consumed;
    const double value = spent == 0 ? record.point_loss / weight_sum + record.point_memory : loop.value;
    ReplayedNewtonEvaluator<T> evaluator(record, step, d, weight_sum, value, point_out, inputs);
    const core::DriverBuffers<T> buffers{vectors,         vectors + d,     vectors + 2 * d,
                                         vectors + 3 * d, vectors + 4 * d, vectors + 5 * d};
    core::UpdateDiagnostics diagnostics;  // this replay's
    const core::SolverResult<T> result =
        core::damped_newton(evaluator, d, point, loop.max_iter - spent, loop.tol, buffers, diagnostics);
    core::UpdateDiagnostics& total = loop.diagnostics;
    if (evaluator.needs_host()) {
        loop.status = LoopStatus::needs_host;
        return false;
    }
    if (evaluator.requested()) {  // one direction consumed (the request's zero step is not one)
        total.record(core::SolveRoute::cholesky);
        loop.consumed = spent + 1;
        loop.value = evaluator.accepted_value();
        loop.status = LoopStatus::running;
        return true;
    }
    total.cholesky_solves += diagnostics.cholesky_solves;
    total.lu_solves += diagnostics.lu_solves;
    total.least_squares_solves += diagnostics.least_squares_solves;
    total.majorizer_steps += diagnostics.majorizer_steps;
    if (static_cast<int>(diagnostics.solve_route) > static_cast<int>(total.solve_route))
        total.solve_route = diagnostics.solve_route;
    for (std::int64_t j = 0; j < d; ++j) point_out[j] = result.theta[j];  // theta_hat, and the closing's move
    inputs->t = evaluator.pending_t();
    inputs->trial = -1;
    loop.status = LoopStatus::finished;
    loop.iterations = result.iterations + spent;
    loop.converged = result.converged ? 1 : 0;
    loop.reason = result.reason;
    loop.objective = result.objective;
    return false;
}

// What one replay reads and writes (every pointer on the device; the same
// from batch to batch for one GraphKey, so the loop's graph is reused).
template <class T>
struct NewtonReplayArgs {
    DeviceNewtonLoop* loop = nullptr;
    const PassRecord* live = nullptr;    // the direction just formed: its pass record,
    const SystemFlags* system = nullptr;  // its system's flags
    const T* live_step = nullptr;         // and its step
    const SurrogateTerms<T>* terms = nullptr;  // N
    T* point_out = nullptr;    // in: the point the direction was formed at; out: the next one, or theta_hat
    PassInputs* inputs = nullptr;  // the residual's move the next scoring pass applies
    std::int64_t d = 0;
};

// Replays the driver over the direction just formed (replay_direction) and
// sets the loop's while condition (`handle`): 1 while the driver asks for
// another direction (0: no loop; the status alone, for tests). One block:
// its threads copy the record, the step and the point into shared memory,
// thread 0 replays.
template <class T>
void launch_newton_replay(cudaStream_t stream, const NewtonReplayArgs<T>& args, LoopCondition handle);

}  // namespace rh::cuda

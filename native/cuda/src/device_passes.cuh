// The passes over a batch's rows that the host-driven solve asks of the
// device (host_driven_solve.cu), and the batch's closing. Each pass is
// launches only (enqueued on the engine's stream) and leaves what the host
// reads in the pass record (objective.cuh's PassRecord) or a d-vector; the
// evaluators (driven_evaluators.cuh) decide when to read and wait. The
// host's values travel through pinned buffers (PassExchange), written only
// once the device has passed every kernel that reads them (after a wait, or
// at an update's start after the last closing's StreamPoint), so no kernel
// still in flight reads a changed value.
#pragma once

#include <cstdint>

#include "batch.cuh"
#include "batch_constants.cuh"
#include "engine_internal.cuh"
#include "launch.cuh"
#include "linear_solver.cuh"
#include "newton_replay.cuh"
#include "objective.cuh"
#include "workspace.cuh"

namespace rh::cuda {

// The pinned host side of the passes' transfers, one allocation: the pass
// record, the pass inputs, a d-vector read back (a step, a gradient), the
// values the host sends (a point, or LAMM's trial inputs in
// Workspace::trial_inputs' layout), LAMM's trial points the device
// proposed and the batch's constants (copied to the device once a batch). The device reads and writes it directly (a kernel, no copy
// engine: launch_receive, launch_publish, the memory kernels' record).
template <class T>
class PassExchange {
public:
    PassExchange(std::int64_t p, std::int64_t d)
        : d_(d),
          upload_count_((d + p + 1) * kLammTrialsPerPass),
          bytes_(static_cast<std::int64_t>(aligned(sizeof(PassRecord)) + aligned(sizeof(PassInputs)) +
                                           aligned(sizeof(T) * d) + aligned(sizeof(T) * upload_count_) +
                                           aligned(sizeof(T) * d * kLammTrialsPerPass) +
                                           aligned(sizeof(BatchConstants<T>)) + aligned(sizeof(DeviceNewtonLoop)))) {}

    PassRecord* record() const { return reinterpret_cast<PassRecord*>(bytes_.get()); }
    PassInputs* inputs() const { return reinterpret_cast<PassInputs*>(at(aligned(sizeof(PassRecord)))); }
    T* vector() const { return reinterpret_cast<T*>(at(aligned(sizeof(PassRecord)) + aligned(sizeof(PassInputs)))); }
    T* upload() const { return vector() + aligned(sizeof(T) * d_) / sizeof(T); }
    T* candidates() const { return upload() + aligned(sizeof(T) * upload_count_) / sizeof(T); }
    BatchConstants<T>* constants() const {
        return reinterpret_cast<BatchConstants<T>*>(candidates() +
                                                    aligned(sizeof(T) * d_ * kLammTrialsPerPass) / sizeof(T));
    }
    // The device-driven Newton loop's control, sent before it, and its outcome, read after it.
    DeviceNewtonLoop* loop() const {
        return reinterpret_cast<DeviceNewtonLoop*>(reinterpret_cast<unsigned char*>(constants()) +
                                                   aligned(sizeof(BatchConstants<T>)));
    }
    std::int64_t upload_count() const { return upload_count_; }

private:
    static std::size_t aligned(std::size_t bytes) { return (bytes + 63) / 64 * 64; }
    unsigned char* at(std::size_t offset) const { return bytes_.get() + offset; }
    std::int64_t d_, upload_count_;
    PinnedArray<unsigned char> bytes_;
};

// Where a scoring pass left the intercept's sum of s: `count` partial sums
// from `partials` on (launch_newton_system and launch_gradient add them).
struct ScoreSums {
    const double* partials;
    int count;
};

template <class T>
struct DevicePasses {
    cudaStream_t stream;
    cublasHandle_t blas;
    cusolverDnHandle_t solver_handle;
    Workspace<T>& ws;
    LinearSolver<T>& solver;
    PassExchange<T>& host;
    const StagedBatch<T>& batch;
    const SurrogateTerms<T>& terms;
    T tau, h;
    int& syncs;  // the update's host synchronizations
    // The batch's value check when it awaits its judgement (update.cu: a
    // batch of unit weights on this route): launched with the first point
    // pass (or by a wait that comes first), judged after the first wait,
    // before any value read there reaches a driver.
    DeferredCheck& check;
    // Whether send_constants() has put this batch's values on the device
    // (then the direction's and the line search's kernels read them there).
    bool constants_sent = false;

    std::int64_t p() const { return terms.p; }
    std::int64_t d() const { return terms.d; }
    int blocks() const { return row_blocks(batch.rows); }
    // Where the passes write their record: the host's (pinned memory, which
    // the host reads) unless `record_target` names one in device memory (the
    // device-driven solve's, which its replays read).
    PassRecord* record_target = nullptr;
    // The record the passes write and the system's flags on the device.
    PassRecord* record() const { return record_target != nullptr ? record_target : host.record(); }
    SystemFlags* system() const { return ws.system.data(); }

    // The host's values to the device: a point into ws.theta and the pass's
    // inputs (the residual's move, the phi of LAMM's trials ahead), read by
    // one kernel; LAMM's trials as the host formed them (host.upload()).
    void send(const T* point, const PassInputs& inputs);
    void send_trials();
    // The batch's constants (its rows, tau, h, the surrogate terms) into
    // ws.constants, once a batch before its first direction: the launches
    // that read them there keep the same arguments from batch to batch (a
    // CUDA graph of them is reused, graph_replay.cuh).
    void send_constants();
    const BatchConstants<T>* batch_constants() const { return constants_sent ? ws.constants.data() : nullptr; }
    // What the host reads after a pass: the system's flags (with
    // `system_flags`), a device d-vector into host.vector() and n2 values
    // into host.candidates(); the wait (counted; the first judges the batch's
    // value check when it is pending, launching it first if no pass has).
    void publish(bool system_flags, const T* vector, const T* values = nullptr, std::int64_t n2 = 0);
    void wait();
    // The same wait for `event` (recorded on the stream) instead of the
    // whole stream: work enqueued after it runs on.
    void wait_for(cudaEvent_t event);

    // r = y - Z point (point on the device) and the partial sums of w loss(r)
    // (one launch for p <= kRowProductColumns, else cuBLAS's gemv first);
    // with `check_values` on the narrow route, the batch check's partial
    // sums after the loss's (ws.partials + blocks()). Whether it counted them.
    bool start(const T* point, bool check_values = false);
    // F's parts at ws.theta: the residual there (start), record.point_loss
    // and record.point_memory; the pending batch check with the first one
    // when p <= kRowProductColumns.
    void point_pass();
    // The residual moved (ws.inputs), then s = w score(r), and with
    // `curvature` c = w kappa(r) and the Gram G of c.
    void score(bool curvature);
    // ws.product = X' s.
    void score_products();
    // A Newton direction's row work: score(true) and score_products(), in
    // one pass over the rows up to kNarrowGram parameters
    // (launch_narrow_score_gram: the same G and moved r; s and c formed
    // row by row, not stored; X' s summed in double). Returns where the
    // intercept's sum of s is.
    ScoreSums direction_scores();
    // G = Z' diag(weights) Z (upper triangle, column-major): the narrow
    // kernel up to kNarrowGram parameters, GEMM of the weighted rows beyond.
    void weighted_gram(const T* weights, T* G);
    // dz = Z ws.step (one launch with the losses for p <= kRowProductColumns,
    // else cuBLAS's gemv first), the losses at every halving of the line search from
    // ws.theta and the memory part of f at each halving's point; the
    // memory's quadratic along the step.
    void halving_pass();
    // The losses and memory at the majorizer's doublings u = 2, 4, ...
    // (dz as the halving pass left it, the residual not yet moved).
    void doubling_pass();
    // LAMM's trials from ws.theta along ws.gradient at phi, 2 phi, ...
    // (phi: the pass inputs'), formed on the device as core::LammProposal
    // forms them on the host, into ws.trial_inputs.
    void propose_trials(const T* mask, double lambda_value);
    // LAMM's trials in ws.trial_inputs (candidates, changes): their
    // residuals (ws.trial_residuals; one launch with the losses for p <=
    // kRowProductColumns, else cuBLAS's GEMM first), losses and memory.
    void lamm_trial_pass();
    // J_next = J + Z' diag(w kappa(r_hat)) Z with the residual moved to
    // r_hat (ws.inputs), theta_next = ws.theta.
    void close();
    // meat_next = meat + Z' diag(w score(r_hat)^2) Z at theta_next.
    void close_meat();
};

}  // namespace rh::cuda

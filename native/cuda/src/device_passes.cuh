// The passes over a batch's rows that the host-driven solve asks of the
// device (host_driven_solve.cu), and the batch's closing. Each pass is
// launches only (enqueued on the engine's stream) and leaves what the host
// reads in the pass record (objective.cuh's PassRecord) or a d-vector; the
// evaluators (driven_evaluators.cuh) decide when to read and wait. The
// host's values travel through pinned buffers (PassExchange), written only
// after the stream was drained, so no copy still in flight reads a changed
// value.
#pragma once

#include <cstdint>

#include "batch.cuh"
#include "engine_internal.cuh"
#include "launch.cuh"
#include "linear_solver.cuh"
#include "objective.cuh"
#include "workspace.cuh"

namespace rh::cuda {

// The pinned host side of the passes' transfers.
template <class T>
struct PassExchange {
    PassExchange(std::int64_t p, std::int64_t d)
        : vector(d), upload((d + p + 1) * kLammTrialsPerPass), candidates(d * kLammTrialsPerPass) {}
    PinnedArray<PassRecord> record{1};
    PinnedArray<PassInputs> inputs{1};
    PinnedArray<T> vector;      // a step or a gradient read back (d)
    PinnedArray<T> upload;      // a point (d), or LAMM's trial inputs (Workspace::trial_inputs' layout)
    PinnedArray<T> candidates;  // LAMM's trial points the device proposed, read back (d x K)
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

    std::int64_t p() const { return terms.p; }
    std::int64_t d() const { return terms.d; }
    int blocks() const { return row_blocks(batch.rows); }
    PassRecord* record() const { return ws.record.data(); }
    SystemFlags* system() const { return &ws.record.data()->system; }

    // The host's values to the device: a point into ws.theta, the pass's
    // inputs (the residual's move, the phi of LAMM's trials ahead), LAMM's
    // trials as the host formed them (host.upload).
    void upload_point(const T* point);
    void upload_inputs(const PassInputs& inputs);
    void upload_trials();
    // The record, a device d-vector into host.vector, the device's trial
    // points into host.candidates; the wait (counted).
    void read_record();
    void read_vector(const T* device_vector);
    void read_candidates();
    void wait();

    // r = y - Z point (point on the device) and the partial sums of w loss(r).
    void start(const T* point);
    // F's parts at ws.theta: the residual there (start), record.losses[0]
    // and record.memory[0].
    void point_pass();
    // The residual moved (ws.inputs), then s = w score(r), and with
    // `curvature` c = w kappa(r) and the Gram G of c.
    void score(bool curvature);
    // ws.product = X' s.
    void score_products();
    // G = Z' diag(weights) Z (upper triangle, column-major): the narrow
    // kernel up to kNarrowGram parameters, GEMM of the weighted rows beyond.
    void weighted_gram(const T* weights, T* G);
    // dz = Z ws.step, the losses at every halving of the line search from
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
    // residuals (ws.trial_residuals), losses and memory.
    void lamm_trial_pass();
    // J_next = J + Z' diag(w kappa(r_hat)) Z with the residual moved to
    // r_hat (ws.inputs), theta_next = ws.theta.
    void close();
    // meat_next = meat + Z' diag(w score(r_hat)^2) Z at theta_next.
    void close_meat();
};

}  // namespace rh::cuda

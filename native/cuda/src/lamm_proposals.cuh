// LAMM's trials proposed on the device, ahead of the host's driver: the
// trial at phi and the kLammTrialsPerPass - 1 the driver would try after it
// if each were rejected (core::LammProposal's phi sequence), each point
// formed by core::lamm_proposal, the function the driver forms its own with.
// This file is compiled without FMA contraction (-fmad=false), so each
// point has the bits the host's driver gives it: the host-driven LAMM
// evaluator (driven_evaluators.cuh) answers a trial from this pass only
// when the driver's candidate equals the device's bit for bit.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

namespace rh::cuda {

// From theta along gradient (device, d) at phi = *phi, 2 phi, ...:
// candidates (d x K, column-major), their changes' feature part (p x K)
// and intercept part (K; only with an intercept).
template <class T>
void launch_lamm_proposals(cudaStream_t stream, std::int64_t d, std::int64_t p, bool intercept, const T* theta,
                           const T* gradient, const T* mask, double lambda_value, const double* phi, T* candidates,
                           T* feature_changes, T* intercept_changes);

}  // namespace rh::cuda

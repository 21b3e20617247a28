// A Newton direction's d-sized work for d <= kSmallSystem in one launch: the
// gradient and the system H (launch_newton_system's), then the Cholesky rung
// on them (launch_small_cholesky_step's), by one block of kRungThreads.
// The two launches it replaces left the block idle between them and cost
// the host one launch more an iteration; H, g, the flags and the step have
// the bits of those two (the same functions on the same operands: the
// rung's gtests compare them).
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "objective.cuh"

namespace rh::cuda {

// g and H at theta (as launch_newton_system forms them: s_partials the
// scoring pass's `blocks` partials, gx = Z' s, G the Gram), then step and
// flags as launch_small_cholesky_step decides them. d <= kSmallSystem.
// `terms_on_device` as launch_newton_system's.
template <class T>
void launch_small_newton_step(cudaStream_t stream, const SurrogateTerms<T>& terms, const T* theta, const T* gx,
                              const double* s_partials, int blocks, const T* G, T* g, T* H, T* step,
                              SystemFlags* flags, const SurrogateTerms<T>* terms_on_device = nullptr);

}  // namespace rh::cuda

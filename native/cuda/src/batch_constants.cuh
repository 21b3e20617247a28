// What a Newton direction's launches read that changes from one batch to
// the next (the batch's rows, tau and the bandwidth h, the surrogate terms
// with the committed state's addresses and N), held in device memory and
// written once a batch (DevicePasses::send_constants), so that the launches'
// own arguments stay the same from batch to batch and one captured CUDA
// graph serves every batch of a shape (graph_replay.cuh). The kernels that
// take it read their values there when it is given (not null) and their
// launch arguments otherwise: the same values, so the same bits.
#pragma once

#include "objective.cuh"

namespace rh::cuda {

template <class T>
struct BatchConstants {
    SurrogateTerms<T> terms;
    const T* X = nullptr;  // the batch's rows (n x p, row-major) and weights, on the device
    const T* w = nullptr;
    T tau = T(0), h = T(0);
};

// The surrogate terms inside `constants` (a device address; null for none).
template <class T>
inline const SurrogateTerms<T>* terms_in(const BatchConstants<T>* constants) {
    return constants != nullptr ? &constants->terms : nullptr;
}

#if defined(__CUDACC__)
// A kernel's row inputs from `constants` when it is given (X, w and tau
// keep their launch values otherwise), and the bandwidth h likewise.
template <class T>
__device__ __forceinline__ void read_row_inputs(const BatchConstants<T>* constants, const T*& X, const T*& w, T& tau) {
    if (constants == nullptr) return;
    X = constants->X;
    w = constants->w;
    tau = constants->tau;
}
template <class T>
__device__ __forceinline__ void read_bandwidth(const BatchConstants<T>* constants, T& h) {
    if (constants != nullptr) h = constants->h;
}

// A kernel's surrogate terms from device memory when given.
template <class T>
__device__ __forceinline__ void read_terms(const SurrogateTerms<T>* on_device, SurrogateTerms<T>& terms) {
    if (on_device != nullptr) terms = *on_device;
}
#endif

}  // namespace rh::cuda

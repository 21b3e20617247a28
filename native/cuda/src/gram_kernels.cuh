// The weighted Gram G = Z' diag(c) Z of a tall, narrow batch (d <= kNarrowGram)
// without a weighted copy of the rows: each warp accumulates, over its
// chunks of 4 rows read straight from X and c, the 8 x 8 blocks I <= J of
// the upper triangle on the FP64 tensor cores (tensor_core_gram.cuh); each
// block adds its warps' sums, and a second kernel adds the blocks' partial
// Grams in block order into G (column-major, upper triangle, the layout
// SYRK gives). cuBLAS's SYRK tiles the d x d output and leaves most of the
// GPU idle on such shapes (a 65,536 x 33 float32 Gram took 5.3 ms).
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "batch_constants.cuh"
#include "huber_kernels.cuh"

namespace rh::cuda {

inline constexpr std::int64_t kNarrowGram = 64;

// Doubles of partial sums the kernels below need for d parameters (a
// block's Gram entries and its Z' s).
std::int64_t narrow_gram_partials(std::int64_t d);

template <class T>
void launch_narrow_gram(cudaStream_t stream, std::int64_t n, std::int64_t p, bool intercept, const T* X, const T* c,
                        double* partials, T* G);

// A Newton direction's row work for d <= kNarrowGram in one read of the
// batch: the residual moved as launch_score_rows moves it (written back to
// r), s = w score(r) and c = w kappa(r) of each row (neither stored), the
// Gram G = Z' diag(c) Z as launch_narrow_gram forms it (the same bits), and
// Z' s: X' s into gx (p entries, summed in double) and the intercept's sum
// of s into *score_sum (zero without an intercept). tau and h as
// launch_score_rows takes them; X, w, tau and h from `constants` when
// given (batch_constants.cuh).
template <class T>
void launch_narrow_score_gram(cudaStream_t stream, std::int64_t n, std::int64_t p, bool intercept, const T* X,
                              const ResidualAdvance<T>& advance, const T* w, T tau, T h, T* r, double* partials, T* G,
                              T* gx, double* score_sum, const BatchConstants<T>* constants = nullptr);

}  // namespace rh::cuda

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

namespace rh::cuda {

inline constexpr std::int64_t kNarrowGram = 64;

// Doubles of partial Grams the kernels need for d parameters.
std::int64_t narrow_gram_partials(std::int64_t d);

template <class T>
void launch_narrow_gram(cudaStream_t stream, std::int64_t n, std::int64_t p, bool intercept, const T* X, const T* c,
                        double* partials, T* G);

}  // namespace rh::cuda

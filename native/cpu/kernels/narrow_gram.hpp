// The weighted Gram of narrow designs (p <= narrow_gram_max_features<T>)
// without BLAS: register tiles of the upper triangle, accumulated over
// blocks of rows that stay in L1.
//
//     G[:d, :d] (upper triangle) += alpha * sum_i c_i z_i z_i',
//     z_i = [x_i, 1] with an intercept, x_i otherwise.
//
// For a narrow batch a library SYRK spends most of its time packing, and
// the fast path's full Gram also had to gather the sqrt(c)-scaled rows
// first (docs/native-cpu.md, "Measurements behind the code"). Here
// X is read in place: each tile of 4 Gram rows x 1-2 vectors of columns
// keeps its sums in registers while a block of rows streams through it.
// Defined and explicitly instantiated (float, double) in narrow_gram.cpp,
// multiversioned.
#pragma once

#include <cstdint>

namespace rh::cpu::fast {

// Widest p the kernel takes (every shape class of PERFORMANCE.md; faster
// than gather + SYRK at each of them, not tried wider).
template <class T>
inline constexpr std::int64_t narrow_gram_max_features = 256;

// Elements of the scratch buffer the kernel needs for p features (its
// column sums and a zero-padded copy of the last rows).
inline std::int64_t narrow_gram_scratch_size(std::int64_t p) {
    const std::int64_t width = (p + 15) / 16 * 16;
    return width * width + 4 * width;
}

// Adds alpha * sum_i c_i z_i z_i' over rows [0, n) of X (n x p, row-major)
// to the upper triangle of G (d x d, row-major, d = p + intercept); c ==
// nullptr means every c_i = 1. Entries below the diagonal are not touched.
// scratch: narrow_gram_scratch_size(p) elements, overwritten.
template <class T>
void narrow_gram_accumulate(std::int64_t n, std::int64_t p, bool intercept, const T* X, const T* c, T alpha, T* G,
                            T* scratch);

}  // namespace rh::cpu::fast

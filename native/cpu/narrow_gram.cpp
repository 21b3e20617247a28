#include "cpu/narrow_gram.hpp"

#include <algorithm>

#include "core/multiversion.hpp"

namespace rh::cpu::fast {

// The kernels once per instruction-set level: 64-byte vectors with AVX-512,
// 32-byte ones otherwise.
#define RH_KERNEL_FILE "cpu/narrow_gram_kernel.inc"
#include "core/per_target_kernels.inc"

template <class T>
void narrow_gram_accumulate(std::int64_t n, std::int64_t p, bool intercept, const T* X, const T* c, T alpha, T* G,
                            T* scratch) {
    RH_BY_LEVEL(narrow_gram, n, p, intercept, X, c, alpha, G, scratch)
}

template void narrow_gram_accumulate<float>(std::int64_t, std::int64_t, bool, const float*, const float*, float,
                                            float*, float*);
template void narrow_gram_accumulate<double>(std::int64_t, std::int64_t, bool, const double*, const double*, double,
                                             double*, double*);

}  // namespace rh::cpu::fast

#include "cpu/kernels/narrow_gram.hpp"

#include <algorithm>

#include "cpu/platform/isa_dispatch.hpp"

namespace rh::cpu::fast {

// The kernels once per instruction-set level: 64-byte vectors with AVX-512,
// 32-byte ones otherwise.
#define RH_KERNEL_FILE "cpu/kernels/narrow_gram_kernel.inc"
#include "cpu/platform/per_target_kernels.inc"

template <class T>
void narrow_gram_accumulate(std::int64_t n, std::int64_t p, bool intercept, const T* X, const T* c, T alpha, T* G,
                            T* scratch) {
    RH_BY_LEVEL(narrow_gram, n, p, intercept, X, c, alpha, G, scratch)
}

#define RH_INSTANTIATE(T) \
    template void narrow_gram_accumulate<T>(std::int64_t, std::int64_t, bool, const T*, const T*, T, T*, T*);
RH_FOR_EACH_FLOAT(RH_INSTANTIATE)
#undef RH_INSTANTIATE

}  // namespace rh::cpu::fast

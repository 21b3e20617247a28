#include "cpu/narrow_gram.hpp"

#include <algorithm>

#include "core/multiversion.hpp"

namespace rh::cpu::fast {

// The kernel once per instruction-set level (core/multiversion.hpp,
// RH_PER_TARGET): 64-byte vectors with AVX-512, 32-byte ones otherwise.
#if RH_PER_TARGET
#pragma GCC push_options
#pragma GCC target("arch=x86-64-v4")
namespace v4 {
constexpr int kVectorBytes = 64;
#include "cpu/narrow_gram_kernel.inc"
}  // namespace v4
#pragma GCC pop_options
#pragma GCC push_options
#pragma GCC target("arch=x86-64-v3")
namespace v3 {
constexpr int kVectorBytes = 32;
#include "cpu/narrow_gram_kernel.inc"
}  // namespace v3
#pragma GCC pop_options
#endif
namespace baseline {
constexpr int kVectorBytes = 32;
#include "cpu/narrow_gram_kernel.inc"
}  // namespace baseline

template <class T>
void narrow_gram_accumulate(std::int64_t n, std::int64_t p, bool intercept, const T* X, const T* c, T alpha, T* G) {
#if RH_PER_TARGET
    switch (core::isa_level()) {
        case core::IsaLevel::x86_64_v4: return v4::narrow_gram(n, p, intercept, X, c, alpha, G);
        case core::IsaLevel::x86_64_v3: return v3::narrow_gram(n, p, intercept, X, c, alpha, G);
        default: break;
    }
#endif
    baseline::narrow_gram(n, p, intercept, X, c, alpha, G);
}

template void narrow_gram_accumulate<float>(std::int64_t, std::int64_t, bool, const float*, const float*, float,
                                            float*);
template void narrow_gram_accumulate<double>(std::int64_t, std::int64_t, bool, const double*, const double*, double,
                                             double*);

}  // namespace rh::cpu::fast

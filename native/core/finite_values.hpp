// Whether every value of an array is finite, as one inline loop that each
// engine compiles where it needs it (core/invariants.cpp portably, the CPU
// engine once per instruction-set level: cpu/platform/finite_scan.cpp).
#pragma once

#include <cstdint>
#include <cstring>

namespace rh::core {

template <class T>
struct FloatBits;
template <>
struct FloatBits<float> {
    using type = std::uint32_t;
    static constexpr type exponent = 0x7f800000u;
};
template <>
struct FloatBits<double> {
    using type = std::uint64_t;
    static constexpr type exponent = 0x7ff0000000000000ull;
};

template <class T>
inline bool all_finite_values(const T* values, std::int64_t count) noexcept {
    // NaN and infinity are the values whose exponent bits are all set. An
    // integer test (no floating-point comparison, which GCC will not
    // if-convert while FP traps are assumed) OR-reduced over the array
    // vectorizes at every instruction-set level.
    using Bits = typename FloatBits<T>::type;
    constexpr Bits exponent = FloatBits<T>::exponent;
    Bits not_finite = 0;
#pragma omp simd reduction(| : not_finite)
    for (std::int64_t i = 0; i < count; ++i) {
        Bits bits;
        std::memcpy(&bits, values + i, sizeof(Bits));
        not_finite |= static_cast<Bits>((bits & exponent) == exponent);
    }
    return not_finite == 0;
}

}  // namespace rh::core

// Sum of n values in NumPy's pairwise order (numpy `add.reduce` on a
// contiguous array: blocks of <= 128 summed with 8 interleaved accumulators,
// larger ranges split in halves rounded down to a multiple of 8). The values
// come from a generator, so the caller fuses the element computation into
// the reduction pass and still rounds exactly like `np.sum(array)`.
#pragma once

#include <cstdint>

namespace rh::cpu::reference {

inline constexpr std::int64_t kPairwiseBlock = 128;

template <class T, class ValueAt>
T pairwise_sum(std::int64_t begin, std::int64_t n, ValueAt&& value_at) {
    if (n < 8) {
        T sum = T(0);
        for (std::int64_t i = 0; i < n; ++i) sum += value_at(begin + i);
        return sum;
    }
    if (n <= kPairwiseBlock) {
        T acc[8];
        for (int k = 0; k < 8; ++k) acc[k] = value_at(begin + k);
        std::int64_t i = 8;
        for (; i < n - (n % 8); i += 8)
            for (int k = 0; k < 8; ++k) acc[k] += value_at(begin + i + k);
        T sum = ((acc[0] + acc[1]) + (acc[2] + acc[3])) + ((acc[4] + acc[5]) + (acc[6] + acc[7]));
        for (; i < n; ++i) sum += value_at(begin + i);
        return sum;
    }
    std::int64_t half = n / 2;
    half -= half % 8;
    const T left = pairwise_sum<T>(begin, half, value_at);
    return left + pairwise_sum<T>(begin + half, n - half, value_at);
}

template <class T, class ValueAt>
T pairwise_sum(std::int64_t n, ValueAt&& value_at) {
    return pairwise_sum<T>(std::int64_t{0}, n, value_at);
}

}  // namespace rh::cpu::reference

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <vector>

#include "cpu/reference/pairwise_sum.hpp"

using rh::cpu::reference::pairwise_sum;

TEST(PairwiseSum, SumsExactlyRepresentableValuesExactly) {
    for (std::int64_t n : {0, 1, 7, 8, 9, 127, 128, 129, 1000, 4097}) {
        const double sum = pairwise_sum<double>(n, [](std::int64_t i) { return double(i % 5); });
        double expected = 0;
        for (std::int64_t i = 0; i < n; ++i) expected += double(i % 5);
        EXPECT_EQ(sum, expected) << n;
    }
}

TEST(PairwiseSum, FollowsNumpysBlockOrder) {
    // 1 + 1e16 + (-1e16) + ... : the 8 interleaved accumulators of NumPy keep
    // the small terms that a sequential sum would absorb.
    std::vector<double> values(16, 0.0);
    values[0] = 1e16;
    values[8] = -1e16;
    values[1] = 1.0;
    EXPECT_EQ(pairwise_sum<double>(16, [&](std::int64_t i) { return values[i]; }), 1.0);
}

namespace {
// Values of widely different magnitudes from a 64-bit LCG (the Python of
// the comment below generates the same ones).
std::vector<double> lcg_values(std::int64_t n, std::uint64_t seed) {
    std::vector<double> out;
    std::uint64_t x = seed;
    for (std::int64_t i = 0; i < n; ++i) {
        x = x * 6364136223846793005ull + 1442695040888963407ull;
        const double mantissa = double((x >> 11) & ((1u << 20) - 1)) / double(1u << 20) + 1.0;
        const int exponent = int((x >> 40) % 61) - 20;
        out.push_back(((x >> 63) & 1 ? -1.0 : 1.0) * std::ldexp(mantissa, exponent));
    }
    return out;
}
}  // namespace

// The whole tree pinned against NumPy: np.sum of these values (NumPy 2.x,
// contiguous float64) gives exactly the constants below, and a sequential
// sum, a split at n/2 not rounded to a multiple of 8, or blocks of 64
// would each give other bits for these values:
//
//   x = seed; for i in range(n): x = (x * 6364136223846793005 + 1442695040888963407) % 2**64;
//   v = (-1 if x >> 63 else 1) * ((x >> 11 & (2**20 - 1)) / 2**20 + 1) * 2.0 ** ((x >> 40) % 61 - 20)
TEST(PairwiseSum, EqualsNumpysSumOnValuesEveryOtherOrderRoundsDifferently) {
    const auto a = lcg_values(300, 1);
    EXPECT_EQ(pairwise_sum<double>(300, [&](std::int64_t i) { return a[i]; }), -0x1.b4ceda4f0821fp+40);
    const auto b = lcg_values(1000, 3);
    EXPECT_EQ(pairwise_sum<double>(1000, [&](std::int64_t i) { return b[i]; }), 0x1.6c20fc93eec61p+43);
    double sequential = 0.0;
    for (double v : a) sequential += v;
    EXPECT_NE(sequential, -0x1.b4ceda4f0821fp+40);  // the values do tell orders apart
}

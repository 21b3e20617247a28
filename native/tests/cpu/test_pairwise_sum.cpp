#include <gtest/gtest.h>

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

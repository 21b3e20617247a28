#include <gtest/gtest.h>

#include <cmath>

#include "core/schedules.hpp"

using rh::core::bandwidth;
using rh::core::lambda_level;
using rh::core::Penalty;

TEST(Schedules, BandwidthFollowsTheFormulaAndIsCappedByTau) {
    EXPECT_DOUBLE_EQ(bandwidth(1.345, 1.0, 100.0, 10), 1.0 / (10.0 * std::log(10.0)));
    EXPECT_DOUBLE_EQ(bandwidth(0.01, 1.0, 100.0, 10), 0.01);
}

TEST(Schedules, FewerThanTwoFeaturesUseLogTwo) {
    EXPECT_DOUBLE_EQ(bandwidth(5.0, 1.0, 4.0, 1), 1.0 / (2.0 * std::log(2.0)));
    EXPECT_DOUBLE_EQ(lambda_level(Penalty::l1, 1.0, 1.0, 4.0, 1), std::sqrt(std::log(2.0) / 4.0));
}

TEST(Schedules, LambdaIsZeroWithoutPenalty) {
    EXPECT_EQ(lambda_level(Penalty::none, 1.345, 1.0, 50.0, 5), 0.0);
    EXPECT_DOUBLE_EQ(lambda_level(Penalty::l1, 1.345, 0.5, 50.0, 5), 0.5 * 1.345 * std::sqrt(std::log(5.0) / 50.0));
}

#include <gtest/gtest.h>

#include "core/huber.hpp"

using namespace rh::core;

TEST(Huber, LossIsQuadraticInsideAndLinearOutside) {
    EXPECT_DOUBLE_EQ(huber_loss(0.5, 1.0), 0.125);
    EXPECT_DOUBLE_EQ(huber_loss(-3.0, 1.0), 3.0 - 0.5);
    EXPECT_DOUBLE_EQ(huber_loss(1.0, 1.0), 0.5);
}

TEST(Huber, ScoreIsTheClippedResidual) {
    EXPECT_EQ(huber_score(0.3, 1.0), 0.3);
    EXPECT_EQ(huber_score(7.0, 1.0), 1.0);
    EXPECT_EQ(huber_score(-7.0, 1.0), -1.0);
}

TEST(Huber, SmoothedCurvatureHasRampsOfWidthTwoH) {
    const double tau = 1.0, h = 0.1;
    EXPECT_EQ(smoothed_curvature(0.0, tau, h), 1.0);
    EXPECT_EQ(smoothed_curvature(2.0, tau, h), 0.0);
    EXPECT_EQ(smoothed_curvature(-2.0, tau, h), 0.0);
    EXPECT_DOUBLE_EQ(smoothed_curvature(1.0, tau, h), 0.5);
    EXPECT_DOUBLE_EQ(smoothed_curvature(-1.0, tau, h), 0.5);
    EXPECT_NEAR(smoothed_curvature(1.05, tau, h), 0.25, 1e-12);
    EXPECT_NEAR(smoothed_curvature(-0.95, tau, h), 0.75, 1e-12);
}

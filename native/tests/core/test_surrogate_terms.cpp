// The batch's bookkeeping written once in core (core/surrogate_terms.hpp,
// core/batch_closing.hpp): the intercept is never penalized nor part of the
// history direction, the history applies only to l1 after the first rows,
// and the reported objective adds the L1 term of the features alone.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "core/batch_closing.hpp"
#include "core/memory_along_step.hpp"
#include "core/surrogate_terms.hpp"

using namespace rh::core;

TEST(SurrogateTerms, TheInterceptIsNeitherPenalizedNorInTheHistoryDirection) {
    const std::vector<double> previous{2.5, -0.5, 0.0, 7.0};  // three features, intercept 7 last
    std::vector<double> mask(4), direction(4);
    penalty_mask_and_history(4, 3, previous.data(), mask.data(), direction.data());
    EXPECT_EQ(mask, (std::vector<double>{1, 1, 1, 0}));
    EXPECT_EQ(direction, (std::vector<double>{1, -1, 0, 0}));
    // Without an intercept every parameter is a feature.
    penalty_mask_and_history(3, 3, previous.data(), mask.data(), direction.data());
    EXPECT_EQ(mask[2], 1.0);
}

TEST(SurrogateTerms, HistoryOnlyForL1AfterTheFirstRows) {
    SolverConfig config;
    StateCounters counters;
    counters.n_samples_seen = 10;
    counters.weight_sum = 10.0;
    counters.previous_lambda = 0.3;
    EXPECT_FALSE(uses_history(config, counters));  // penalty none
    config.penalty = Penalty::l1;
    EXPECT_TRUE(uses_history(config, counters));
    // A state that has seen no rows applies no history, whatever else it says.
    counters.n_samples_seen = 0;
    EXPECT_FALSE(uses_history(config, counters));
    EXPECT_DOUBLE_EQ(history_coefficient(10.0, 40.0, 0.3), 0.25 * 0.3);
}

TEST(SurrogateTerms, ReportedObjectiveAddsTheFeaturesL1TermOnly) {
    const std::vector<float> theta{1.5f, -2.0f, 100.0f}, mask{1.0f, 1.0f, 0.0f};
    EXPECT_DOUBLE_EQ(masked_l1_norm(3, theta.data(), mask.data()), 3.5);
    EXPECT_DOUBLE_EQ(reported_objective(Penalty::l1, 1.0, 0.5, 3, theta.data(), mask.data()), 1.0 + 0.5 * 3.5);
    EXPECT_DOUBLE_EQ(reported_objective(Penalty::none, 1.0, 0.5, 3, theta.data(), mask.data()), 1.0);
}

TEST(BatchClosing, NextCountersAdvanceByOneBatch) {
    StateCounters previous{3, true, 100, 4, 0.1, 90.0};
    const StateCounters next = next_counters(previous, 25, 0.2, 110.0);
    EXPECT_EQ(next.n_features_in, 3);
    EXPECT_TRUE(next.fit_intercept);
    EXPECT_EQ(next.n_samples_seen, 125);
    EXPECT_EQ(next.batch_count, 5);
    EXPECT_EQ(next.previous_lambda, 0.2);
    EXPECT_EQ(next.weight_sum, 110.0);
}

// The quadratic in t equals the memory and history terms formed directly at
// D(t) = theta - t step - theta_prev, with the history on and off.
TEST(MemoryAlongStep, EqualsTheTermsFormedAtEachStep) {
    const int d = 3;
    const double J[d][d] = {{4.0, 1.0, -0.5}, {1.0, 3.0, 0.25}, {-0.5, 0.25, 2.0}};
    const double theta[d] = {0.3, -1.2, 2.0}, previous[d] = {0.1, -1.0, 1.5}, step[d] = {0.7, 0.2, -0.4};
    const double history[d] = {1.0, -1.0, 0.0};
    const double n = 40.0, c = 0.125;
    for (const bool uses_history : {false, true}) {
        MemoryAlongStep m;
        double D0[d], JD0[d] = {}, JS[d] = {};
        for (int i = 0; i < d; ++i) D0[i] = theta[i] - previous[i];
        for (int i = 0; i < d; ++i)
            for (int j = 0; j < d; ++j) {
                JD0[i] += J[i][j] * D0[j];
                JS[i] += J[i][j] * step[j];
            }
        for (int i = 0; i < d; ++i) {
            m.a += D0[i] * JD0[i];
            m.b1 += step[i] * JD0[i];
            m.b2 += D0[i] * JS[i];
            m.c += step[i] * JS[i];
            m.history0 += D0[i] * history[i];
            m.history1 += step[i] * history[i];
        }
        m.inverse_n = 1.0 / n;
        m.history_coefficient = c;
        m.uses_history = uses_history;
        for (const double t : {0.0, 0.25, 1.0, 2.0, 64.0}) {
            double D[d], quadratic = 0.0, along_history = 0.0;
            for (int i = 0; i < d; ++i) D[i] = theta[i] - t * step[i] - previous[i];
            for (int i = 0; i < d; ++i) {
                for (int j = 0; j < d; ++j) quadratic += D[i] * J[i][j] * D[j];
                along_history += D[i] * history[i];
            }
            const double direct = 0.5 * quadratic / n - (uses_history ? c * along_history : 0.0);
            EXPECT_NEAR(m.at(t), direct, 1e-12 * (1.0 + std::fabs(direct))) << "t=" << t;
        }
    }
}

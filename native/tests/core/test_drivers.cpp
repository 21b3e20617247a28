// The two solver drivers (core/newton_driver.hpp, core/lamm_driver.hpp) over
// small evaluators whose answers are known: they converge where the
// contract says, stop unconverged when their trials fail, and record routes.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "core/lamm_driver.hpp"
#include "core/newton_driver.hpp"

using namespace rh::core;

namespace {

// f(theta) = sum_j 0.5 c_j (theta_j - a_j)^2, exact Newton steps.
struct Quadratic {
    std::vector<double> a, c;
    SolveRoute route = SolveRoute::lu;
    bool refuse_every_trial = false;
    int trials = 0;

    double value(const double* theta) const {
        double sum = 0.0;
        for (std::size_t j = 0; j < a.size(); ++j) sum += 0.5 * c[j] * (theta[j] - a[j]) * (theta[j] - a[j]);
        return sum;
    }
    double start(const double* theta) { return value(theta); }
    SolveRoute direction(const double* theta, double* step) {
        for (std::size_t j = 0; j < a.size(); ++j) step[j] = theta[j] - a[j];  // H^-1 g
        return route;
    }
    double trial(double, const double* candidate, double current) {
        ++trials;
        return refuse_every_trial ? current + 1.0 : value(candidate);
    }
    double accept(double, const double*, double trial_value) { return trial_value; }
    double norm(const double* x) const {
        double sum = 0.0;
        for (std::size_t j = 0; j < a.size(); ++j) sum += x[j] * x[j];
        return std::sqrt(sum);
    }
    // LAMM's side.
    void gradient(const double* theta, double* g) const {
        for (std::size_t j = 0; j < a.size(); ++j) g[j] = c[j] * (theta[j] - a[j]);
    }
    double dot(const double* x, const double* y) const {
        double sum = 0.0;
        for (std::size_t j = 0; j < a.size(); ++j) sum += x[j] * y[j];
        return sum;
    }
    double trial(const double* candidate, const double*, double, const LammProposal<double>&) {
        ++trials;
        return refuse_every_trial ? 1e300 : value(candidate);
    }
    void accept() {}
};

struct Buffers {
    std::vector<double> theta, candidate, step, gradient;
    explicit Buffers(std::size_t d) : theta(d), candidate(d), step(d), gradient(d) {}
    DriverBuffers<double> view() { return {theta.data(), candidate.data(), step.data(), gradient.data()}; }
};

}  // namespace

TEST(NewtonDriver, ConvergesToTheMinimizerAndRecordsTheRoute) {
    Quadratic f{{1.0, -2.0, 3.0}, {1.0, 4.0, 0.5}};
    f.route = SolveRoute::least_squares;
    Buffers b(3);
    const std::vector<double> start{0.0, 0.0, 0.0};
    UpdateDiagnostics diagnostics;
    const auto result = damped_newton(f, 3, start.data(), 100, 1e-10, b.view(), diagnostics);
    EXPECT_TRUE(result.converged);
    for (int j = 0; j < 3; ++j) EXPECT_DOUBLE_EQ(result.theta[j], f.a[j]);
    EXPECT_EQ(result.objective, 0.0);
    EXPECT_EQ(diagnostics.solve_route, SolveRoute::least_squares);
    EXPECT_EQ(diagnostics.least_squares_solves, result.iterations);
    EXPECT_TRUE(diagnostics.used_least_squares_fallback());
}

TEST(NewtonDriver, AnExhaustedLineSearchStopsUnconvergedAtThePreviousPoint) {
    Quadratic f{{1.0, 1.0}, {1.0, 1.0}};
    f.refuse_every_trial = true;
    Buffers b(2);
    const std::vector<double> start{0.0, 0.0};
    UpdateDiagnostics diagnostics;
    const auto result = damped_newton(f, 2, start.data(), 100, 1e-10, b.view(), diagnostics);
    EXPECT_FALSE(result.converged);
    EXPECT_EQ(result.iterations, 1);
    EXPECT_EQ(result.theta[0], 0.0);
    EXPECT_EQ(result.objective, f.value(start.data()));
    EXPECT_EQ(f.trials, 27);  // t = 1, 1/2, ..., 2^-26 (the last >= 1e-8)
}

TEST(NewtonDriver, AStepThatRoundsToThetaIsConvergence) {
    Quadratic f{{1.0, 1.0}, {1.0, 1.0}};
    Buffers b(2);
    const std::vector<double> start{1.0, 1.0 + 1e-17};  // 1 + 1e-17 == 1: the step rounds away
    UpdateDiagnostics diagnostics;
    const auto result = damped_newton(f, 2, start.data(), 100, 1e-10, b.view(), diagnostics);
    EXPECT_TRUE(result.converged);
    EXPECT_EQ(result.iterations, 1);
    EXPECT_EQ(f.trials, 0);
}

TEST(NewtonDriver, MaxIterReachedIsNotConvergence) {
    Quadratic f{{1.0, -1.0}, {1.0, 1.0}};
    Buffers b(2);
    const std::vector<double> start{0.0, 0.0};
    UpdateDiagnostics diagnostics;
    const auto result = damped_newton(f, 2, start.data(), 1, 1e-10, b.view(), diagnostics);
    EXPECT_FALSE(result.converged);  // the one step moved the whole way: no convergence test passed yet
    EXPECT_EQ(result.iterations, 1);
}

TEST(LammDriver, ConvergesToTheSoftThresholdedMinimizerWithAFreeIntercept) {
    // f = 0.5 (theta - a)^2 per coordinate; the L1 minimizer is soft(a, lambda)
    // on the feature and a itself on the intercept (mask 0).
    Quadratic f{{2.0, 5.0}, {1.0, 1.0}};
    Buffers b(2);
    const std::vector<double> start{0.0, 0.0}, mask{1.0, 0.0};
    const auto result = lamm(f, 2, start.data(), mask.data(), 0.5, 500, 1e-12, b.view());
    EXPECT_TRUE(result.converged);
    EXPECT_NEAR(result.theta[0], 1.5, 1e-9);
    EXPECT_NEAR(result.theta[1], 5.0, 1e-9);
}

TEST(LammDriver, ExhaustedMajorizationTrialsStopUnconverged) {
    Quadratic f{{2.0}, {1.0}};
    f.refuse_every_trial = true;
    Buffers b(1);
    const std::vector<double> start{0.0}, mask{1.0};
    const auto result = lamm(f, 1, start.data(), mask.data(), 0.1, 500, 1e-12, b.view());
    EXPECT_FALSE(result.converged);
    EXPECT_EQ(result.iterations, 1);
    EXPECT_EQ(result.theta[0], 0.0);
    EXPECT_EQ(f.trials, kMaxMajorizationTrials);
}

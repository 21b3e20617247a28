// The two solver drivers (core/newton_driver.hpp, core/lamm_driver.hpp) over
// small evaluators whose answers are known: they converge where the
// contract says, take the majorizer's step when Newton's fails, hand a
// stalled LAMM to its accelerated phase, stop unconverged (with the reason)
// when their trials fail, and record routes.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "core/lamm_driver.hpp"
#include "core/newton_driver.hpp"
#include "core/search_steps.hpp"

using namespace rh::core;

namespace {

// f(theta) = sum_j 0.5 c_j (theta_j - a_j)^2, exact Newton steps.
struct Quadratic {
    std::vector<double> a, c;
    SolveRoute route = SolveRoute::lu;
    SolveRoute majorizer_route = SolveRoute::lu;
    bool refuse_every_trial = false;
    bool uphill_newton = false;   // Newton's direction points uphill (no t decreases f)
    bool nan_at_full_step = false;  // f(t = 1) is NaN
    bool empty_least_squares = false;  // Newton's system "drops" every direction: zero step, least squares
    int trials = 0, majorizer_solves = 0, moves = 0;

    double value(const double* theta) const {
        double sum = 0.0;
        for (std::size_t j = 0; j < a.size(); ++j) sum += 0.5 * c[j] * (theta[j] - a[j]) * (theta[j] - a[j]);
        return sum;
    }
    double start(const double* theta) { return value(theta); }
    SolveRoute direction(const double* theta, double* step) {
        const double sign = uphill_newton ? -1.0 : 1.0;
        for (std::size_t j = 0; j < a.size(); ++j) step[j] = empty_least_squares ? 0.0 : sign * (theta[j] - a[j]);
        return empty_least_squares ? SolveRoute::least_squares : route;
    }
    // M = I majorizes every c_j <= 1: step = g.
    SolveRoute majorizer_direction(const double* theta, double* step) {
        ++majorizer_solves;
        for (std::size_t j = 0; j < a.size(); ++j) step[j] = c[j] * (theta[j] - a[j]);
        return majorizer_route;
    }
    double trial(double t, const double* candidate, double current, const SearchSteps<double>&) {
        ++trials;
        if (nan_at_full_step && t == 1.0) return std::nan("");
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
    double move_to(const double* theta, const double*) {
        ++moves;
        return value(theta);
    }
    void accept() {}
};

struct Buffers {
    std::vector<double> theta, candidate, step, gradient, previous, extrapolated;
    explicit Buffers(std::size_t d)
        : theta(d), candidate(d), step(d), gradient(d), previous(d), extrapolated(d) {}
    DriverBuffers<double> view() {
        return {theta.data(), candidate.data(), step.data(), gradient.data(), previous.data(), extrapolated.data()};
    }
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

TEST(NewtonDriver, ExhaustedNewtonAndMajorizerSearchesStopUnconvergedAtThePreviousPoint) {
    Quadratic f{{1.0, 1.0}, {1.0, 1.0}};
    f.refuse_every_trial = true;
    Buffers b(2);
    const std::vector<double> start{0.0, 0.0};
    UpdateDiagnostics diagnostics;
    const auto result = damped_newton(f, 2, start.data(), 100, 1e-10, b.view(), diagnostics);
    EXPECT_FALSE(result.converged);
    EXPECT_EQ(result.reason, StopReason::line_search_exhausted);
    EXPECT_EQ(result.iterations, 1);
    EXPECT_EQ(result.theta[0], 0.0);
    EXPECT_EQ(result.objective, f.value(start.data()));
    EXPECT_EQ(f.trials, 2 * 27);  // t = 1, 1/2, ..., 2^-26 (the last >= 1e-8), Newton's then the majorizer's
    EXPECT_EQ(f.majorizer_solves, 1);
    EXPECT_EQ(diagnostics.majorizer_steps, 1);
}

TEST(NewtonDriver, AnExhaustedLineSearchTakesTheMajorizerStepAndContinues) {
    // Newton's direction is useless (uphill): every iteration the majorizer's
    // step (M = I, step = g) is taken instead, and the driver converges.
    Quadratic f{{1.0, -2.0}, {1.0, 0.5}};
    f.uphill_newton = true;
    f.majorizer_route = SolveRoute::least_squares;
    Buffers b(2);
    const std::vector<double> start{0.0, 0.0};
    UpdateDiagnostics diagnostics;
    const auto result = damped_newton(f, 2, start.data(), 200, 1e-10, b.view(), diagnostics);
    EXPECT_TRUE(result.converged);
    EXPECT_EQ(result.reason, StopReason::converged);
    EXPECT_NEAR(result.theta[0], 1.0, 1e-9);
    EXPECT_NEAR(result.theta[1], -2.0, 1e-8);
    // Every iteration but the last (whose zero Newton step rounds to theta: convergence).
    EXPECT_EQ(diagnostics.majorizer_steps, result.iterations - 1);
    // Both routes of every iteration are counted; the batch's route is the most robust one.
    EXPECT_EQ(diagnostics.lu_solves, result.iterations);
    EXPECT_EQ(diagnostics.least_squares_solves, result.iterations - 1);
    EXPECT_EQ(diagnostics.solve_route, SolveRoute::least_squares);
}

TEST(NewtonDriver, ALeastSquaresStepCertifiesNoConvergence) {
    // The least-squares route drops every direction (a zero step) although
    // the gradient is not zero: the majorizer's step decides, and moves.
    Quadratic f{{1.0, -2.0}, {1.0, 0.5}};
    f.empty_least_squares = true;
    Buffers b(2);
    const std::vector<double> start{0.0, 0.0};
    UpdateDiagnostics diagnostics;
    const auto result = damped_newton(f, 2, start.data(), 500, 1e-10, b.view(), diagnostics);
    EXPECT_TRUE(result.converged);
    EXPECT_NEAR(result.theta[0], 1.0, 1e-8);
    EXPECT_NEAR(result.theta[1], -2.0, 1e-8);
    EXPECT_GE(diagnostics.majorizer_steps, 1);
    EXPECT_EQ(diagnostics.solve_route, SolveRoute::least_squares);
}

TEST(NewtonDriver, TheMajorizerSearchDoublesAnAcceptedFullStep) {
    // M = I overestimates the curvature 0.01 a hundredfold: from 0 the
    // majorizer's step is 0.01 (a - theta); doubling t up to 128 (f still
    // decreasing, 256 overshoots) moves 1.28 of the way in one iteration.
    Quadratic f{{1.0}, {0.01}};
    f.uphill_newton = true;
    Buffers b(1);
    const std::vector<double> start{0.0};
    UpdateDiagnostics diagnostics;
    const auto result = damped_newton(f, 1, start.data(), 1, 1e-10, b.view(), diagnostics);
    EXPECT_EQ(diagnostics.majorizer_steps, 1);
    EXPECT_DOUBLE_EQ(result.theta[0], 1.28);
    EXPECT_DOUBLE_EQ(result.objective, f.value(result.theta));
}

// The driver hands every trial its search (core/search_steps.hpp): the steps
// it then tries are the ones `upcoming` listed ahead, which is what lets an
// evaluator answer several trials from one pass.
TEST(NewtonDriver, EveryTrialIsAStepItsSearchListedAhead) {
    struct Recorder : Quadratic {
        struct Call {
            SearchSteps<double>::Kind kind;
            double t;
            std::vector<double> ahead;  // upcoming(t) as the driver handed it
        };
        std::vector<Call> calls;
        double trial(double t, const double* candidate, double current, const SearchSteps<double>& steps) {
            std::vector<double> ahead(64);
            ahead.resize(steps.upcoming(t, ahead.data(), 64));
            calls.push_back({steps.kind, t, ahead});
            return Quadratic::trial(t, candidate, current, steps);
        }
    } f;
    f.a = {1.0};
    f.c = {0.01};
    f.uphill_newton = true;  // Newton's halvings all fail; the majorizer's t = 1 is taken, then doubled to 128
    Buffers b(1);
    const std::vector<double> start{0.0};
    UpdateDiagnostics diagnostics;
    damped_newton(f, 1, start.data(), 1, 1e-10, b.view(), diagnostics);

    using Kind = SearchSteps<double>::Kind;
    // Split the calls into searches: a halving search starts at t = 1, the
    // doubling at t = 2; a doubling search ends by trying its best step again.
    std::vector<std::vector<const Recorder::Call*>> searches;
    for (const auto& call : f.calls) {
        const bool starts = call.t == (call.kind == Kind::halving ? 1.0 : 2.0);
        if (starts || searches.empty() || searches.back().front()->kind != call.kind) searches.push_back({});
        searches.back().push_back(&call);
    }
    ASSERT_EQ(searches.size(), 3u);  // Newton's halvings, the majorizer's, its doubling
    EXPECT_EQ(searches[0].size(), 27u);  // t = 1 ... 2^-26
    EXPECT_EQ(searches[1].size(), 1u);   // t = 1 taken
    EXPECT_EQ(searches[2].size(), 8u + 1u);  // t = 2 ... 256 (overshoots), then 128 again
    for (const auto& search : searches) {
        const auto& listed = search.front()->ahead;
        for (std::size_t k = 0; k < search.size(); ++k) {
            const auto* call = search[k];
            ASSERT_FALSE(call->ahead.empty()) << "t=" << call->t;
            EXPECT_EQ(call->ahead.front(), call->t);  // every trial is a step of its own search
            if (call->kind == Kind::doubling && k + 1 == search.size()) {  // the best step again: listed ahead
                EXPECT_EQ(call->t, 128.0);
                EXPECT_NE(std::find(listed.begin(), listed.end(), call->t), listed.end());
            } else {
                ASSERT_LT(k, listed.size());
                EXPECT_EQ(call->t, listed[k]) << "step " << k << " of a search not listed ahead";
            }
        }
    }
    EXPECT_EQ(searches[0].front()->ahead.size(), 27u);  // the halving's whole range
    EXPECT_EQ(searches[2].front()->ahead.size(), 20u);  // t = 2 ... 2^20
}

TEST(SearchSteps, AHalvingSearchListsNoStepThatRoundsToTheta) {
    // Below 2^30 doubles are 2^-23 apart: 2^30 - 2^-23 is a double, 2^30 -
    // 2^-24 a tie that rounds to 2^30 (kSmallestStep is far below 2^-24).
    const double theta[2] = {1073741824.0, 1.0}, step[2] = {1.0, 1e-20};
    const auto steps = SearchSteps<double>::halving(2, theta, step);
    double ahead[64];
    const int count = steps.upcoming(1.0, ahead, 64);
    ASSERT_GT(count, 0);
    EXPECT_FALSE(steps.rounds_to_theta(ahead[count - 1]));
    EXPECT_TRUE(steps.rounds_to_theta(ahead[count - 1] / 2.0));
    EXPECT_EQ(count, 24);  // t = 1 ... 2^-23
    double candidate[2];
    EXPECT_TRUE(steps.form(ahead[count - 1] / 2.0, candidate));
    EXPECT_FALSE(steps.form(ahead[count - 1], candidate));
    EXPECT_EQ(steps.upcoming(0.25, ahead, 3), 3);
    EXPECT_EQ(ahead[2], 0.0625);
}

TEST(NewtonDriver, ANonFiniteObjectiveIsNeverAccepted) {
    Quadratic f{{1.0, 1.0}, {1.0, 1.0}};
    f.nan_at_full_step = true;
    Buffers b(2);
    const std::vector<double> start{0.0, 0.0};
    UpdateDiagnostics diagnostics;
    const auto result = damped_newton(f, 2, start.data(), 1, 1e-10, b.view(), diagnostics);
    EXPECT_EQ(result.theta[0], 0.5);  // t = 1 (NaN) rejected, t = 1/2 taken
    EXPECT_TRUE(std::isfinite(result.objective));
}

TEST(NewtonDriver, TheFallbackRouteOfAnyIterationIsReported) {
    // A least-squares solve on the first iteration only: the batch still reports it.
    struct FirstLeastSquares : Quadratic {
        int calls = 0;
        SolveRoute direction(const double* theta, double* step) {
            Quadratic::direction(theta, step);
            return ++calls == 1 ? SolveRoute::least_squares : SolveRoute::lu;
        }
    } f;
    f.a = {1.0, -1.0};
    f.c = {1.0, 0.25};
    f.uphill_newton = false;
    Buffers b(2);
    const std::vector<double> start{0.0, 0.0};
    UpdateDiagnostics diagnostics;
    // Exact Newton steps: iteration 1 lands on the minimizer, iteration 2's change is 0.
    const auto result = damped_newton(f, 2, start.data(), 10, 1e-10, b.view(), diagnostics);
    EXPECT_TRUE(result.converged);
    EXPECT_GE(result.iterations, 2);
    EXPECT_EQ(diagnostics.least_squares_solves, 1);
    EXPECT_TRUE(diagnostics.used_least_squares_fallback());
    EXPECT_EQ(diagnostics.solve_route, SolveRoute::least_squares);
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
    EXPECT_EQ(result.reason, StopReason::max_iter);
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
    EXPECT_EQ(result.reason, StopReason::majorization_exhausted);
    EXPECT_EQ(result.iterations, 1);
    EXPECT_EQ(result.theta[0], 0.0);
    EXPECT_EQ(f.trials, kMaxMajorizationTrials);
}

// f = (theta - a)' C (theta - a) / 2 with C = [[1, rho], [rho, 1]]: condition
// number (1 + rho) / (1 - rho), the slow case of proximal gradient.
struct Correlated {
    double rho = 0.99;
    std::vector<double> a{2.0, -3.0};
    int moves = 0;
    double value(const double* t) const {
        const double u = t[0] - a[0], v = t[1] - a[1];
        return 0.5 * (u * u + 2 * rho * u * v + v * v);
    }
    double start(const double* t) { return value(t); }
    double move_to(const double* t, const double*) {
        ++moves;
        return value(t);
    }
    void gradient(const double* t, double* g) const {
        const double u = t[0] - a[0], v = t[1] - a[1];
        g[0] = u + rho * v;
        g[1] = rho * u + v;
    }
    double dot(const double* x, const double* y) const { return x[0] * y[0] + x[1] * y[1]; }
    double norm(const double* x) const { return std::sqrt(dot(x, x)); }
    double trial(const double* candidate, const double*, double, const LammProposal<double>&) {
        return value(candidate);
    }
    void accept() {}
};

TEST(LammDriver, AStalledIterationHandsOverToTheAcceleratedPhase) {
    // Condition number 199 and no penalty on the second coordinate: plain
    // LAMM needs thousands of iterations for tol 1e-7; the accelerated
    // phase converges within 300, to the same minimizer.
    const std::vector<double> start{0.0, 0.0}, mask{1.0, 0.0};
    Correlated f;
    Buffers b(2);
    const auto result = lamm(f, 2, start.data(), mask.data(), 0.0, 300, 1e-7, b.view());
    EXPECT_TRUE(result.converged);
    EXPECT_EQ(result.reason, StopReason::converged);
    EXPECT_GT(result.iterations, kPlainLammIterations);
    EXPECT_GT(f.moves, 0);  // extrapolated points were evaluated
    EXPECT_NEAR(result.theta[0], 2.0, 1e-4);
    EXPECT_NEAR(result.theta[1], -3.0, 1e-4);
    // With a penalty: the KKT point of 0.5 x'Cx + lambda |theta_0|.
    Correlated g;
    const auto penalized = lamm(g, 2, start.data(), mask.data(), 0.05, 300, 1e-8, b.view());
    EXPECT_TRUE(penalized.converged);
    // theta_1 = a_1 - rho (theta_0 - a_0); theta_0 = 0 is the KKT point
    // because (1 - rho^2) |0 - a_0| = 0.0398 <= lambda.
    EXPECT_EQ(penalized.theta[0], 0.0);
    EXPECT_NEAR(penalized.theta[1], -3.0 + 0.99 * 2.0, 1e-6);
}

TEST(LammDriver, MaxIterReachedIsNotConvergence) {
    Correlated f;
    Buffers b(2);
    const std::vector<double> start{0.0, 0.0}, mask{1.0, 0.0};
    const auto result = lamm(f, 2, start.data(), mask.data(), 0.0, 30, 1e-9, b.view());
    EXPECT_FALSE(result.converged);
    EXPECT_EQ(result.reason, StopReason::max_iter);
    EXPECT_EQ(result.iterations, 30);
}

TEST(LammDriver, AQuicklyConvergingProblemNeverLeavesTheV1Iteration) {
    Quadratic f{{2.0, -3.0}, {1.0, 0.5}};
    Buffers b(2);
    const std::vector<double> start{0.0, 0.0}, mask{1.0, 0.0};
    const auto result = lamm(f, 2, start.data(), mask.data(), 0.05, 400, 1e-9, b.view());
    EXPECT_TRUE(result.converged);
    EXPECT_LT(result.iterations, kPlainLammIterations);
    EXPECT_EQ(f.moves, 0);
}

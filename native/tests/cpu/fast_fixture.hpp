// A fast-path problem over random rows, with its buffers, part runner and
// context, for tests of the fast path's pieces (Gram cache, LAMM evaluator,
// local Huber model).
#pragma once

#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

#include "core/lamm_driver.hpp"
#include "cpu/buffer_growth.hpp"
#include "cpu/fast/fast_buffers.hpp"
#include "cpu/fast/gram_cache.hpp"
#include "cpu/fast/lamm_evaluator.hpp"
#include "cpu/fast/problem.hpp"
#include "cpu/kernels/narrow_passes.hpp"
#include "cpu/parallel_reduce.hpp"
#include "cpu/platform/worker_pool.hpp"

namespace rh::test {

template <class T>
struct FastFixture {
    std::int64_t n, p, d;
    std::vector<T> X, y, w;
    cpu::BufferGrowth growth;
    cpu::fast::FastBuffers<T> ws;
    cpu::WorkerPool pool;
    cpu::PartRunner runner;
    cpu::fast::Problem<T> problem;
    cpu::fast::Context<T> context{ws, runner};

    FastFixture(std::int64_t rows, std::int64_t features, int threads)
        : n(rows), p(features), d(features + 1), X(rows * features), y(rows, T(0)), w(rows, T(1)),
          runner(&pool, threads) {
        std::mt19937_64 rng(3);
        std::normal_distribution<double> normal;
        for (auto& v : X) v = T(normal(rng));
        ws.reserve(growth, n, d, threads);
        problem.rows = n;
        problem.features = p;
        problem.d = d;
        problem.intercept = true;
        problem.X = X.data();
        problem.y = y.data();
        problem.w = w.data();
    }

    // Z' diag(c) Z in double, directly.
    std::vector<double> exact_gram(const std::vector<T>& c) const {
        std::vector<double> G(d * d, 0.0);
        for (std::int64_t i = 0; i < n; ++i)
            for (std::int64_t j = 0; j < d; ++j)
                for (std::int64_t k = 0; k < d; ++k) {
                    const double zj = j < p ? double(X[i * p + j]) : 1.0, zk = k < p ? double(X[i * p + k]) : 1.0;
                    G[j * d + k] += double(c[i]) * zj * zk;
                }
        return G;
    }
};

// A LAMM problem on a fixture's rows: y from a sparse linear model with
// noise and outliers, panels built (narrow rows), empty memory.
template <class T>
struct LammFixture {
    std::vector<T> theta_prev, information, direction, mask;
    double lambda = 0.05;

    explicit LammFixture(FastFixture<T>& f)
        : theta_prev(f.d, T(0)), information(f.d * f.d, T(0)), direction(f.d, T(0)), mask(f.d, T(1)) {
        std::mt19937_64 rng(21);
        std::normal_distribution<double> normal;
        for (std::int64_t i = 0; i < f.n; ++i) {
            double value = 0.3;
            for (std::int64_t j = 0; j < f.p; ++j) value += (j % 3 == 0 ? 1.0 : 0.0) * double(f.X[i * f.p + j]);
            f.y[i] = T(value + 0.2 * normal(rng) + (i % 50 == 0 ? 8.0 * normal(rng) : 0.0));
        }
        mask[f.p] = T(0);
        f.ws.reserve_local_model(f.growth, f.n, f.d);
        auto& P = f.problem;
        if (f.p <= cpu::fast::narrow_pass_max_features<T>) {  // the panels, as the engine builds them
            f.ws.reserve_panels(f.growth, f.n, f.p);
            cpu::fast::narrow_build_panels(f.n, f.p, f.X.data(), f.ws.narrow_panels.data());
            P.panels = f.ws.narrow_panels.data();
            P.panel_columns = cpu::fast::narrow_panel_columns(f.p);
        }
        P.theta_prev = theta_prev.data();
        P.information_prev = information.data();
        P.history_direction = direction.data();
        P.weight_sum = double(f.n);
        P.tau = T(1.345);
        P.bandwidth = T(0.5);
    }
};

// One fast LAMM solve of the fixture's problem: theta_hat, the residual
// the evaluator leaves, and how often its shortcuts served.
template <class T>
struct LammOutcome {
    core::SolverResult<T> result;
    std::vector<T> theta, residual;
    cpu::fast::LammShortcuts shortcuts;
};

template <class T>
LammOutcome<T> solve_lamm(FastFixture<T>& f, const LammFixture<T>& l, int max_iter = 200, double tol = 1e-6) {
    const std::int64_t d = f.problem.d;
    cpu::fast::GramCache<T> gram(f.problem, f.context);
    cpu::GramCounters counters;
    cpu::fast::LammEvaluator<T> evaluator(f.problem, f.context, gram, counters);
    std::vector<T> theta(d), candidate(d), step(d), gradient(d);
    LammOutcome<T> out;
    out.result = core::lamm(evaluator, d, l.theta_prev.data(), l.mask.data(), l.lambda, max_iter, tol,
                            core::DriverBuffers<T>{theta.data(), candidate.data(), step.data(), gradient.data()});
    evaluator.finish(out.result.theta);
    out.theta.assign(out.result.theta, out.result.theta + d);
    out.residual.assign(f.ws.residual.begin(), f.ws.residual.begin() + f.n);
    out.shortcuts = evaluator.shortcuts;
    out.result.theta = nullptr;  // the driver's buffers are gone
    return out;
}

// The residual, loss, X' s and score sum at theta, directly in double.
template <class T>
void direct_terms(const FastFixture<T>& f, const std::vector<T>& theta, std::vector<T>& r, double* loss,
                  std::vector<T>& product, double* score_sum) {
    const double tau = double(f.problem.tau);
    std::vector<double> sums(f.p, 0.0);
    *loss = 0.0;
    *score_sum = 0.0;
    for (std::int64_t i = 0; i < f.n; ++i) {
        double fitted = double(theta[f.p]);
        for (std::int64_t j = 0; j < f.p; ++j) fitted += double(f.X[i * f.p + j]) * double(theta[j]);
        const double ri = double(f.y[i]) - fitted, a = std::fabs(ri);
        r[i] = T(ri);
        *loss += a <= tau ? 0.5 * ri * ri : tau * a - 0.5 * tau * tau;
        const double s = std::max(-tau, std::min(tau, ri));
        *score_sum += s;
        for (std::int64_t j = 0; j < f.p; ++j) sums[j] += s * double(f.X[i * f.p + j]);
    }
    for (std::int64_t j = 0; j < f.p; ++j) product[j] = T(sums[j]);
}

}  // namespace rh::test

// The local Huber model (cpu/fast/local_huber_model.hpp): inside its ball
// its loss and X' s are a direct pass's, also at the ball's edge along each
// row's worst direction (where a row's residual moves fastest toward its
// corner), which fails as soon as the model's reach is smaller than the ball.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

#include "fast_fixture.hpp"

using namespace rh;
using rh::test::direct_terms;
using rh::test::FastFixture;
using rh::test::LammFixture;

namespace {

// A model built at theta0 (exact residual r0) with a ball of radius
// kLocalRadiusSteps * step, and what it needs to be compared with passes.
template <class T>
struct BuiltModel {
    FastFixture<T>& f;
    std::vector<T> theta0, r0, product;
    double loss0 = 0.0, score_sum0 = 0.0, radius = 0.0;
    cpu::fast::GramCache<T> gram;
    cpu::GramCounters counters;
    cpu::fast::LocalHuberModel<T> model;

    BuiltModel(FastFixture<T>& fixture, double step)
        : f(fixture), theta0(f.d), r0(f.n), product(f.p), gram(f.problem, f.context), model(f.problem, f.context) {
        for (std::int64_t j = 0; j < f.d; ++j) theta0[j] = T(j % 3 == 0 ? 1.0 : 0.05 * double(j));
        direct_terms(f, theta0, r0, &loss0, product, &score_sum0);
        radius = cpu::fast::kLocalRadiusSteps * step;
        built = model.build(gram, counters, theta0.data(), r0.data(), loss0, product.data(), score_sum0, step);
    }
    bool built = false;

    double row_norm(std::int64_t i) const {
        double sum = 1.0;  // the intercept's 1
        for (std::int64_t j = 0; j < f.p; ++j) sum += double(f.X[i * f.p + j]) * double(f.X[i * f.p + j]);
        return std::sqrt(sum);
    }
    // The point at `length` from theta0 along row i's worst direction: its
    // residual moves straight toward the corner sign(r0_i) tau.
    std::vector<T> toward_corner(std::int64_t i, double length) const {
        const double tau = double(f.problem.tau), r = double(r0[i]);
        const double corner = r < 0 ? -tau : tau;
        const double sign = r - corner > 0 ? 1.0 : -1.0;  // r(theta) = r0 - z' (theta - theta0)
        const double norm = row_norm(i);
        std::vector<T> theta(f.d);
        for (std::int64_t j = 0; j < f.d; ++j) {
            const double z = j < f.p ? double(f.X[i * f.p + j]) : 1.0;
            theta[j] = T(double(theta0[j]) + sign * length * z / norm);
        }
        return theta;
    }
};

}  // namespace

template <class T>
class LocalHuberModelTest : public ::testing::Test {};
using Dtypes = ::testing::Types<float, double>;
TYPED_TEST_SUITE(LocalHuberModelTest, Dtypes);

// The model's loss and X' s at points inside its ball equal a direct pass
// over the rows at those points (the certain rows' quadratic is exact).
TYPED_TEST(LocalHuberModelTest, EqualsADirectPassInsideTheBall) {
    using T = TypeParam;
    const double tolerance = sizeof(T) == 8 ? 1e-10 : 1e-4;
    for (std::int64_t features : {16, 80}) {  // narrow rows (panels) and wider ones
        FastFixture<T> f(4096, features, 2);
        LammFixture<T> l(f);
        BuiltModel<T> m(f, 0.01);
        ASSERT_TRUE(m.built);
        EXPECT_GT(m.model.uncertain_rows(), 0);
        std::mt19937_64 rng(5);
        std::normal_distribution<double> normal;
        std::vector<T> theta(f.d), r(f.n), direct_product(f.p), model_product(f.p);
        for (int trial = 0; trial < 20; ++trial) {
            double norm = 0.0;
            std::vector<double> u(f.d);
            for (auto& v : u) {
                v = normal(rng);
                norm += v * v;
            }
            const double length = m.radius * (trial + 1) / 21.0;  // up to just inside the ball
            for (std::int64_t j = 0; j < f.d; ++j) theta[j] = T(double(m.theta0[j]) + length * u[j] / std::sqrt(norm));
            ASSERT_TRUE(m.model.contains(theta.data()));
            double loss = 0.0, score_sum = 0.0, model_score_sum = 0.0;
            direct_terms(f, theta, r, &loss, direct_product, &score_sum);
            const double model_loss = m.model.loss(theta.data());
            m.model.scores(theta.data(), model_product.data(), &model_score_sum);
            EXPECT_NEAR(model_loss, loss, tolerance * loss) << "trial " << trial << ", features " << features;
            const double scale = double(f.n);
            EXPECT_NEAR(model_score_sum, score_sum, tolerance * scale) << "trial " << trial << ", features " << features;
            for (std::int64_t j = 0; j < f.p; ++j)
                EXPECT_NEAR(double(model_product[j]), double(direct_product[j]), tolerance * scale)
                    << "trial " << trial << " column " << j;
        }
        // Outside the ball the model says so.
        for (std::int64_t j = 0; j < f.d; ++j) theta[j] = T(double(m.theta0[j]) + m.radius);
        EXPECT_FALSE(m.model.contains(theta.data()));
    }
}

// At the edge of the ball, along each near-corner row's worst direction,
// the model still equals a direct pass. The rows whose distance to their
// corner lies between half and all of the ball's reach R ||z_i|| cross the
// corner there: a model that counted them as certain (a reach of half the
// ball, say) would put them on the wrong piece of the loss.
TEST(LocalHuberModelEdge, ExactAtTheBallsEdgeAlongTheWorstDirections) {
    using T = double;
    for (std::int64_t features : {16, 80}) {
        FastFixture<T> f(4096, features, 2);
        LammFixture<T> l(f);
        BuiltModel<T> m(f, 0.01);
        ASSERT_TRUE(m.built);
        const double tau = double(f.problem.tau);
        std::vector<std::int64_t> crossing, near_bound;
        for (std::int64_t i = 0; i < f.n; ++i) {
            const double gap = std::fabs(std::fabs(double(m.r0[i])) - tau) / m.row_norm(i);  // in units of ||delta||
            if (gap > 0.5 * m.radius && gap <= m.radius) crossing.push_back(i);
            if (gap > m.radius && gap <= 1.2 * m.radius) near_bound.push_back(i);
        }
        ASSERT_GT(crossing.size(), 10u) << "no row crosses its corner inside the ball: the test would prove nothing";
        ASSERT_GT(near_bound.size(), 10u);
        const double length = m.radius * (1.0 - 1e-6);
        std::vector<T> r(f.n), product(f.p);
        int crossed = 0;
        for (const auto* rows : {&crossing, &near_bound}) {
            for (std::size_t k = 0; k < rows->size(); k += std::max<std::size_t>(1, rows->size() / 25)) {
                const std::int64_t i = (*rows)[k];
                const std::vector<T> theta = m.toward_corner(i, length);
                ASSERT_TRUE(m.model.contains(theta.data()));
                double loss = 0.0, score_sum = 0.0;
                direct_terms(f, theta, r, &loss, product, &score_sum);
                crossed += (std::fabs(double(r[i])) <= tau) != (std::fabs(double(m.r0[i])) <= tau);
                EXPECT_NEAR(m.model.loss(theta.data()), loss, 1e-10 * loss)
                    << "row " << i << " toward its corner, features " << features;
            }
        }
        EXPECT_GT(crossed, 0) << "no evaluated row changed its piece";
    }
}

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "core/status.hpp"
#include "cpu/solve_ladder.hpp"

using rh::core::SolveRoute;
using rh::cpu::BufferGrowth;
using rh::cpu::SolveLadder;

namespace {
struct Ladder {
    BufferGrowth growth;
    SolveLadder<double> ladder;
    explicit Ladder(std::int64_t d) { ladder.reserve(growth, d); }
    SolveRoute solve(std::int64_t d, const std::vector<double>& A, const std::vector<double>& b, std::vector<double>& x,
                     bool prefer_cholesky = true) {
        x.assign(d, 0.0);
        return ladder.solve_general(d, A.data(), b.data(), x.data(), prefer_cholesky);
    }
};
}  // namespace

TEST(SolveLadder, SymmetricPositiveDefiniteUsesCholesky) {
    Ladder ladder(2);
    std::vector<double> A{4, 1, 1, 3}, b{1, 2}, x;
    EXPECT_EQ(ladder.solve(2, A, b, x), SolveRoute::cholesky);
    EXPECT_NEAR(4 * x[0] + x[1], 1, 1e-14);
    EXPECT_NEAR(x[0] + 3 * x[1], 2, 1e-14);
}

TEST(SolveLadder, EngineDefaultUsesLuLikeTheReference) {
    Ladder ladder(2);
    std::vector<double> A{4, 1, 1, 3}, b{1, 2}, x;
    EXPECT_EQ(ladder.solve(2, A, b, x, false), SolveRoute::lu);
}

TEST(SolveLadder, AsymmetricMatrixUsesLu) {
    Ladder ladder(2);
    std::vector<double> A{4, 1, 2, 3}, b{1, 2}, x;
    EXPECT_EQ(ladder.solve(2, A, b, x), SolveRoute::lu);
    EXPECT_NEAR(4 * x[0] + 1 * x[1], 1, 1e-14);  // row-major: A[0] = (4, 1)
    EXPECT_NEAR(2 * x[0] + 3 * x[1], 2, 1e-14);
}

TEST(SolveLadder, IndefiniteSymmetricMatrixFallsToLu) {
    Ladder ladder(2);
    std::vector<double> A{1, 2, 2, 1}, b{3, 3}, x;
    EXPECT_EQ(ladder.solve(2, A, b, x), SolveRoute::lu);
    EXPECT_NEAR(x[0], 1, 1e-14);
    EXPECT_NEAR(x[1], 1, 1e-14);
}

TEST(SolveLadder, SingularSystemGetsTheMinimumNormLeastSquaresSolution) {
    Ladder ladder(2);
    // Duplicated column/row: A = [[1, 1], [1, 1]], b = (2, 2): min-norm x = (1, 1).
    std::vector<double> A{1, 1, 1, 1}, b{2, 2}, x;
    EXPECT_EQ(ladder.solve(2, A, b, x), SolveRoute::least_squares);
    EXPECT_NEAR(x[0], 1, 1e-12);
    EXPECT_NEAR(x[1], 1, 1e-12);
}

TEST(SolveLadder, NearlySingularSystemsTakeTheLeastSquaresRouteLikeTheReference) {
    // LU succeeds (no zero pivot) on diag(1, 1e-17), but its reciprocal
    // condition number 1e-17 is below eps * d: the reference ladder, like
    // NumPy's reference, now takes the minimum-norm route and drops the
    // direction; just above the threshold it solves regularly.
    Ladder ladder(2);
    std::vector<double> A{1, 0, 0, 1e-17}, b{1, 1}, x;
    EXPECT_EQ(ladder.solve(2, A, b, x, false), SolveRoute::least_squares);
    EXPECT_NEAR(x[0], 1.0, 1e-15);
    EXPECT_EQ(x[1], 0.0);
    A[3] = 1e-14;  // rcond 1e-14 > 2 eps
    EXPECT_EQ(ladder.solve(2, A, b, x, false), SolveRoute::lu);
    EXPECT_NEAR(x[1], 1e14, 1.0);
    // Also when the matrix is not symmetric: the rcond comes from the LU factors.
    std::vector<double> B{1, 1, 1, 1 + 1e-17}, y;
    EXPECT_EQ(ladder.solve(2, B, b, y, false), SolveRoute::least_squares);
}

TEST(SolveLadder, ANonFiniteSolutionIsNeverReturned) {
    // Well conditioned (rcond 1) but the solution overflows: the regular
    // route is refused, and least squares cannot do better: an engine error,
    // never infinite coefficients.
    Ladder ladder(2);
    std::vector<double> A{1e-300, 0, 0, 1e-300}, b{1e10, 1e10}, x;
    EXPECT_THROW(ladder.solve(2, A, b, x, false), rh::core::EngineError);
    EXPECT_THROW(ladder.solve(2, A, b, x, true), rh::core::EngineError);
}

TEST(SolveLadder, ZeroMatrixGivesZeroStep) {
    Ladder ladder(3);
    std::vector<double> A(9, 0.0), b{1, 2, 3}, x;
    EXPECT_EQ(ladder.solve(3, A, b, x), SolveRoute::least_squares);
    for (double v : x) EXPECT_EQ(v, 0.0);
}

// The fast path's ladder (solve_symmetric_with_fallback): the inline small
// Cholesky rung (d <= 32) and LAPACK's (larger d) on the same terms.
namespace {
template <class T>
std::vector<T> random_spd(std::int64_t d, unsigned seed, double shift) {
    std::vector<double> B(d * d);
    unsigned state = seed;
    for (auto& v : B) {
        state = state * 1103515245u + 12345u;
        v = double((state >> 8) % 2001) / 1000.0 - 1.0;
    }
    std::vector<T> A(d * d);
    for (std::int64_t i = 0; i < d; ++i)
        for (std::int64_t j = 0; j < d; ++j) {
            double sum = i == j ? shift : 0.0;
            for (std::int64_t k = 0; k < d; ++k) sum += B[i * d + k] * B[j * d + k];
            A[i * d + j] = T(sum);
        }
    return A;
}

template <class T>
SolveRoute symmetric_solve(std::int64_t d, const std::vector<T>& A, const std::vector<T>& b, std::vector<T>& x) {
    BufferGrowth growth;
    SolveLadder<T> ladder;
    ladder.reserve(growth, d);
    x.assign(d, T(0));
    return ladder.solve_symmetric(d, A.data(), b.data(), x.data());
}
}  // namespace

TEST(SymmetricLadder, PositiveDefiniteSystemsUseCholeskyAtEverySize) {
    // 33 up: the mirrored matrix in several tiles of 32, the last one partial
    for (std::int64_t d : {1, 2, 5, 17, 31, 32, 33, 48, 70, 100}) {
        const auto A = random_spd<double>(d, 7u + unsigned(d), 0.5);
        std::vector<double> b(d), x;
        for (std::int64_t i = 0; i < d; ++i) b[i] = 1.0 + 0.1 * double(i);
        EXPECT_EQ(symmetric_solve(d, A, b, x), SolveRoute::cholesky) << "d=" << d;
        for (std::int64_t i = 0; i < d; ++i) {
            double row = 0.0, magnitude = 0.0;
            for (std::int64_t j = 0; j < d; ++j) {
                row += A[i * d + j] * x[j];
                magnitude += std::fabs(A[i * d + j] * x[j]);
            }
            EXPECT_NEAR(row, b[i], 1e-12 * (magnitude + 1.0)) << "d=" << d << " row " << i;
        }
    }
}

TEST(SymmetricLadder, FloatSystemsUseCholeskyToo) {
    for (std::int64_t d : {3, 17, 32, 40}) {
        const auto A = random_spd<float>(d, 3u + unsigned(d), 1.0);
        std::vector<float> b(d, 1.0f), x;
        EXPECT_EQ(symmetric_solve(d, A, b, x), SolveRoute::cholesky) << "d=" << d;
        for (std::int64_t i = 0; i < d; ++i) {
            double row = 0.0, magnitude = 0.0;
            for (std::int64_t j = 0; j < d; ++j) {
                row += double(A[i * d + j]) * double(x[j]);
                magnitude += std::fabs(double(A[i * d + j]) * double(x[j]));
            }
            EXPECT_NEAR(row, 1.0, 1e-4 * (magnitude + 1.0)) << "d=" << d << " row " << i;
        }
    }
}

TEST(SymmetricLadder, NumericallySingularSystemsLeaveTheCholeskyRung) {
    // Rank one plus a perturbation far below eps * d of its norm: positive
    // definite in exact arithmetic, singular to working precision.
    for (std::int64_t d : {4, 17, 32, 40}) {
        std::vector<double> A(d * d);
        for (std::int64_t i = 0; i < d; ++i)
            for (std::int64_t j = 0; j < d; ++j) A[i * d + j] = double(i + 1) * double(j + 1) + (i == j ? 1e-20 : 0.0);
        std::vector<double> b(d), x;
        for (std::int64_t i = 0; i < d; ++i) b[i] = double(i + 1);
        const SolveRoute route = symmetric_solve(d, A, b, x);
        EXPECT_NE(route, SolveRoute::cholesky) << "d=" << d;
        for (double v : x) EXPECT_TRUE(std::isfinite(v)) << "d=" << d;
        // b lies in the range: the minimum-norm answer x = b / |v|^2 * v scaled, A x = b.
        for (std::int64_t i = 0; i < d; ++i) {
            double row = 0.0;
            for (std::int64_t j = 0; j < d; ++j) row += A[i * d + j] * x[j];
            EXPECT_NEAR(row, b[i], 1e-9 * double(d * d)) << "d=" << d << " row " << i;
        }
    }
}

TEST(SymmetricLadder, IndefiniteSystemsFallToLu) {
    for (std::int64_t d : {2, 17, 40}) {
        auto A = random_spd<double>(d, 11u, 0.5);
        A[0] = -A[0] - 10.0;  // a negative diagonal entry: not positive definite
        std::vector<double> b(d, 1.0), x;
        EXPECT_EQ(symmetric_solve(d, A, b, x), SolveRoute::lu) << "d=" << d;
    }
}

TEST(SymmetricLadder, FactorizableButIllConditionedSystemsAreSingularToWorkingPrecision) {
    // Cholesky succeeds on diag(1, ..., 1, 1e-18), but its reciprocal
    // condition number 1e-18 is below eps * d: the least-squares rung, which
    // treats the tiny direction as zero. A mildly conditioned one stays on
    // Cholesky.
    for (std::int64_t d : {2, 17, 32, 40}) {
        std::vector<double> A(d * d, 0.0), b(d, 1.0), x;
        for (std::int64_t i = 0; i < d; ++i) A[i * d + i] = 1.0;
        A[d * d - 1] = 1e-18;
        EXPECT_EQ(symmetric_solve(d, A, b, x), SolveRoute::least_squares) << "d=" << d;
        EXPECT_NEAR(x[0], 1.0, 1e-12) << "d=" << d;
        EXPECT_EQ(x[d - 1], 0.0) << "d=" << d;
        A[d * d - 1] = 1e-8;
        EXPECT_EQ(symmetric_solve(d, A, b, x), SolveRoute::cholesky) << "d=" << d;
        EXPECT_NEAR(x[d - 1], 1e8, 1e-4) << "d=" << d;
    }
}

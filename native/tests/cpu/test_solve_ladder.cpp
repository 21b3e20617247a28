#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "cpu/solve_ladder.hpp"

using rh::core::SolveRoute;
using rh::cpu::solve_with_fallback;
using rh::cpu::Workspace;

namespace {
struct Ladder {
    Workspace<double> workspace;
    explicit Ladder(std::int64_t d) { workspace.reserve(1, d, false, false); }
    SolveRoute solve(std::int64_t d, const std::vector<double>& A, const std::vector<double>& b, std::vector<double>& x,
                     bool prefer_cholesky = true) {
        x.assign(d, 0.0);
        return solve_with_fallback(d, A.data(), b.data(), x.data(), workspace, prefer_cholesky);
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

TEST(SolveLadder, ZeroMatrixGivesZeroStep) {
    Ladder ladder(3);
    std::vector<double> A(9, 0.0), b{1, 2, 3}, x;
    EXPECT_EQ(ladder.solve(3, A, b, x), SolveRoute::least_squares);
    for (double v : x) EXPECT_EQ(v, 0.0);
}

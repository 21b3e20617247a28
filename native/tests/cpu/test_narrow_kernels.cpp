// The narrow kernels (cpu/narrow_gram.hpp, cpu/narrow_passes.hpp) against
// direct double-precision sums, at every row-width class and at row counts
// that exercise full row groups, partial groups and the zero-padded tail.
// CTest runs this binary once per instruction-set level the machine has
// (RH_NATIVE_ISA_LEVEL caps cpu::isa_level()).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <vector>

#include "cpu/platform/isa_dispatch.hpp"
#include "cpu/kernels/narrow_gram.hpp"
#include "cpu/kernels/narrow_passes.hpp"

using namespace rh;

namespace {

template <class T>
struct Rows {
    std::int64_t n, p;
    std::vector<T> X, v, y, r, w, c;

    Rows(std::int64_t rows, std::int64_t features, unsigned seed)
        : n(rows), p(features), X(rows * features), v(features + 1), y(rows), r(rows), w(rows), c(rows) {
        std::mt19937_64 rng(seed);
        std::normal_distribution<double> normal;
        std::uniform_real_distribution<double> uniform(0.0, 1.0);
        for (auto& x : X) x = T(normal(rng));
        for (auto& x : v) x = T(0.5 * normal(rng));
        for (std::int64_t i = 0; i < n; ++i) {
            y[i] = T(2.0 * normal(rng));
            r[i] = T(2.0 * normal(rng));
            w[i] = i % 7 == 3 ? T(0) : T(uniform(rng) * 2.0);  // some zero weights
            c[i] = i % 5 == 1 ? T(0) : T(uniform(rng));
        }
    }
    double x(std::int64_t i, std::int64_t j) const { return double(X[i * p + j]); }
    // The passes' column panels of X.
    std::vector<T> panels() const {
        std::vector<T> out(cpu::fast::narrow_panel_size<T>(n, p), T(-99));
        cpu::fast::narrow_build_panels(n, p, X.data(), out.data());
        return out;
    }
    double dot(std::int64_t i, const std::vector<T>& u) const {
        double sum = 0.0;
        for (std::int64_t j = 0; j < p; ++j) sum += x(i, j) * double(u[j]);
        return sum;
    }
    double dot_magnitude(std::int64_t i, const std::vector<T>& u) const {
        double sum = 0.0;
        for (std::int64_t j = 0; j < p; ++j) sum += std::fabs(x(i, j) * double(u[j]));
        return sum;
    }
};

double clip(double r, double tau) { return r < -tau ? -tau : (r > tau ? tau : r); }
double huber(double r, double tau) { return std::fabs(r) <= tau ? 0.5 * r * r : tau * std::fabs(r) - 0.5 * tau * tau; }
// kappa (ALGORITHM.md): 1 inside (-tau+h, tau-h), 0 beyond tau+h, linear ramps between.
double kappa(double r, double tau, double h) {
    if (r < -tau - h || r > tau + h) return 0.0;
    if (r <= -tau + h) return 0.5 + (r + tau) / (2.0 * h);
    if (r >= tau - h) return 0.5 - (r - tau) / (2.0 * h);
    return 1.0;
}

template <class T>
double eps() {
    return double(std::numeric_limits<T>::epsilon());
}

// Feature counts: every vector count of 32- and 64-byte vectors, with
// remainders of every kind, up to the kernels' limit.
template <class T>
std::vector<std::int64_t> widths() {
    std::vector<std::int64_t> out{1, 2, 3, 4, 5, 7, 8, 9, 13, 15, 16, 17, 24, 31, 32};
    if (sizeof(T) == 4)
        for (std::int64_t p : {33, 47, 48, 63, 64}) out.push_back(p);
    return out;
}
const std::int64_t kRowCounts[] = {0, 1, 2, 3, 5, 8, 16, 17, 63, 64, 100, 1000};

template <class T>
class NarrowKernels : public ::testing::Test {};
using Types = ::testing::Types<float, double>;
TYPED_TEST_SUITE(NarrowKernels, Types);

TEST(NarrowKernelsLevel, ReportsTheLevelInUse) {
    const char* level = cpu::isa_level_name(cpu::isa_level());
    ::testing::Test::RecordProperty("isa_level", level);
    std::printf("narrow kernels at %s\n", level);
    SUCCEED();
}

// Building the panels also tests X: true exactly when every value is finite,
// wherever a NaN or infinity sits (register-transposed groups, the rows
// done element by element at the end, every column).
TYPED_TEST(NarrowKernels, BuildPanelsFindsEveryNonFiniteValue) {
    using T = TypeParam;
    const T bad_values[] = {std::numeric_limits<T>::quiet_NaN(), std::numeric_limits<T>::infinity(),
                            -std::numeric_limits<T>::infinity()};
    for (std::int64_t p : widths<T>())
        for (std::int64_t n : kRowCounts) {
            if (n == 0) continue;
            Rows<T> rows(n, p, static_cast<unsigned>(31 * p + n));
            std::vector<T> panels(cpu::fast::narrow_panel_size<T>(n, p));
            ASSERT_TRUE(cpu::fast::narrow_build_panels(n, p, rows.X.data(), panels.data())) << "p=" << p << " n=" << n;
            // Every value of small batches; else the first and last rows
            // whole, the values around every 16th row and a stride of others.
            std::vector<std::int64_t> where;
            if (n * p <= 512) {
                for (std::int64_t k = 0; k < n * p; ++k) where.push_back(k);
            } else {
                for (std::int64_t j = 0; j < p; ++j) where.insert(where.end(), {j, (n - 1) * p + j});
                for (std::int64_t i = 15; i < n; i += 16) where.insert(where.end(), {i * p, i * p + p - 1});
                for (std::int64_t k = 0; k < n * p; k += 97) where.push_back(k);
            }
            for (std::int64_t k : where)
                for (T bad : bad_values) {
                    const T kept = rows.X[k];
                    rows.X[k] = bad;
                    const bool finite = cpu::fast::narrow_build_panels(n, p, rows.X.data(), panels.data());
                    rows.X[k] = kept;
                    ASSERT_FALSE(finite) << "p=" << p << " n=" << n << " value " << k << " = " << bad;
                }
        }
}

// The Gram kernel takes wider rows than the passes.
std::vector<std::int64_t> gram_widths() {
    return {1, 2, 3, 4, 5, 7, 8, 9, 13, 15, 16, 17, 24, 31, 32, 33, 47, 48, 63, 64, 65, 90, 127, 128, 200, 255, 256};
}

TYPED_TEST(NarrowKernels, GramMatchesDirectSums) {
    using T = TypeParam;
    for (std::int64_t p : gram_widths())
        for (std::int64_t n : kRowCounts) {
            if (p > 128 && n > 100) continue;  // the direct sums would take seconds
            for (bool intercept : {true, false})
                for (bool weighted : {true, false})
                    for (T alpha : {T(1), T(-1)}) {
                        Rows<T> rows(n, p, static_cast<unsigned>(97 * p + n));
                        const std::int64_t d = p + (intercept ? 1 : 0);
                        const T sentinel = T(12345);
                        std::vector<T> G(d * d, sentinel);
                        for (std::int64_t j = 0; j < d; ++j)
                            for (std::int64_t k = j; k < d; ++k) G[j * d + k] = T(0.25 * (j + 1));
                        std::vector<T> scratch(cpu::fast::narrow_gram_scratch_size(p), T(-3));
                        cpu::fast::narrow_gram_accumulate(n, p, intercept, rows.X.data(),
                                                          weighted ? rows.c.data() : nullptr, alpha, G.data(),
                                                          scratch.data());
                        for (std::int64_t j = 0; j < d; ++j)
                            for (std::int64_t k = 0; k < d; ++k) {
                                if (k < j) {
                                    ASSERT_EQ(G[j * d + k], sentinel) << "lower triangle written at " << j << "," << k;
                                    continue;
                                }
                                double exact = 0.0, magnitude = 0.0;
                                for (std::int64_t i = 0; i < n; ++i) {
                                    const double zj = j < p ? rows.x(i, j) : 1.0, zk = k < p ? rows.x(i, k) : 1.0;
                                    const double term = (weighted ? double(rows.c[i]) : 1.0) * zj * zk;
                                    exact += term;
                                    magnitude += std::fabs(term);
                                }
                                exact = 0.25 * (j + 1) + double(alpha) * exact;
                                const double tol = eps<T>() * (double(n) + double(p) + 4.0) * (magnitude + 1.0);
                                ASSERT_NEAR(double(G[j * d + k]), exact, tol)
                                    << "p=" << p << " n=" << n << " intercept=" << intercept
                                    << " weighted=" << weighted << " alpha=" << alpha << " at " << j << "," << k;
                            }
                    }
        }
}

// Shared checks of the per-row outputs and X' s of a pass.
template <class T>
void expect_product(const Rows<T>& rows, const std::vector<T>& s, const std::vector<T>& product, const char* what) {
    for (std::int64_t j = 0; j < rows.p; ++j) {
        double exact = 0.0, magnitude = 0.0;
        for (std::int64_t i = 0; i < rows.n; ++i) {
            exact += double(s[i]) * rows.x(i, j);
            magnitude += std::fabs(double(s[i]) * rows.x(i, j));
        }
        ASSERT_NEAR(double(product[j]), exact, eps<T>() * (double(rows.n) + 8.0) * (magnitude + 1.0))
            << what << " product p=" << rows.p << " n=" << rows.n << " column " << j;
    }
}

TYPED_TEST(NarrowKernels, TrialPassMatchesDirectSums) {
    using T = TypeParam;
    const T tau = T(1.345), b = T(0.3);
    for (std::int64_t p : widths<T>())
        for (std::int64_t n : kRowCounts)
            for (bool with_product : {true, false}) {
                Rows<T> rows(n, p, static_cast<unsigned>(31 * p + n));
                std::vector<T> r_trial(n), s(n), product(p, T(-7));
                const auto panels = rows.panels();
                const auto sums = cpu::fast::narrow_trial_pass<T>({.rows = {n, p, panels.data()},
                                                                   .change = rows.v.data(),
                                                                   .b = b,
                                                                   .r = rows.r.data(),
                                                                   .w = rows.w.data(),
                                                                   .tau = tau,
                                                                   .r_trial = r_trial.data(),
                                                                   .product = with_product ? product.data() : nullptr});
                double loss = 0.0, score = 0.0, magnitude = 0.0;
                for (std::int64_t i = 0; i < n; ++i) {
                    const double exact = double(rows.r[i]) - (rows.dot(i, rows.v) + double(b));
                    const double tol =
                        4.0 * eps<T>() * (rows.dot_magnitude(i, rows.v) + std::fabs(double(rows.r[i])) + 1.0);
                    ASSERT_NEAR(double(r_trial[i]), exact, tol) << "p=" << p << " n=" << n << " row " << i;
                    // The pass keeps s in registers; the product is checked against these.
                    s[i] = rows.w[i] * T(clip(double(r_trial[i]), double(tau)));
                    loss += double(rows.w[i]) * huber(double(r_trial[i]), double(tau));
                    score += double(s[i]);
                    magnitude += double(rows.w[i]) * (huber(double(r_trial[i]), double(tau)) + double(tau));
                }
                const double tol = eps<T>() * (double(n) + 8.0) * (magnitude + 1.0);
                EXPECT_NEAR(sums.loss, loss, tol) << "p=" << p << " n=" << n;
                EXPECT_NEAR(sums.score_sum, score, tol) << "p=" << p << " n=" << n;
                if (with_product)
                    expect_product(rows, s, product, "trial");
                else
                    for (T value : product) ASSERT_EQ(value, T(-7)) << "product written without one asked for";
            }
}

// A pair of trials in one pass gives each trial bit for bit what a pass of
// its own gives (so pairing cannot change a LAMM decision).
TYPED_TEST(NarrowKernels, PairTrialPassEqualsTwoSingleTrialsBitForBit) {
    using T = TypeParam;
    const T tau = T(1.345), b_first = T(0.3), b_second = T(-0.1);
    for (std::int64_t p : widths<T>())
        for (std::int64_t n : kRowCounts) {
            Rows<T> rows(n, p, static_cast<unsigned>(13 * p + n));
            const auto panels = rows.panels();
            std::vector<T> second_change(p);
            for (std::int64_t j = 0; j < p; ++j) second_change[j] = T(0.5) * rows.v[j] - T(0.01) * T(j);
            std::vector<T> r_first(n), r_second(n), single_first(n), single_second(n), product(p, T(-7)),
                single_product(p, T(-7));
            cpu::fast::TrialSums first_sums;
            const cpu::fast::PanelRows<T> panel_rows{n, p, panels.data()};
            const auto second_sums = cpu::fast::narrow_pair_trial_pass<T>({.rows = panel_rows,
                                                                           .first_change = rows.v.data(),
                                                                           .first_b = b_first,
                                                                           .second_change = second_change.data(),
                                                                           .second_b = b_second,
                                                                           .r = rows.r.data(),
                                                                           .w = rows.w.data(),
                                                                           .tau = tau,
                                                                           .r_first = r_first.data(),
                                                                           .r_second = r_second.data(),
                                                                           .product = product.data(),
                                                                           .first_sums = &first_sums});
            const auto single_first_sums = cpu::fast::narrow_trial_pass<T>({.rows = panel_rows,
                                                                            .change = rows.v.data(),
                                                                            .b = b_first,
                                                                            .r = rows.r.data(),
                                                                            .w = rows.w.data(),
                                                                            .tau = tau,
                                                                            .r_trial = single_first.data(),
                                                                            .product = nullptr});
            const auto single_second_sums = cpu::fast::narrow_trial_pass<T>({.rows = panel_rows,
                                                                             .change = second_change.data(),
                                                                             .b = b_second,
                                                                             .r = rows.r.data(),
                                                                             .w = rows.w.data(),
                                                                             .tau = tau,
                                                                             .r_trial = single_second.data(),
                                                                             .product = single_product.data()});
            ASSERT_EQ(r_first, single_first) << "p=" << p << " n=" << n;
            ASSERT_EQ(r_second, single_second) << "p=" << p << " n=" << n;
            ASSERT_EQ(product, single_product) << "p=" << p << " n=" << n;
            EXPECT_EQ(first_sums.loss, single_first_sums.loss) << "p=" << p << " n=" << n;
            EXPECT_EQ(second_sums.loss, single_second_sums.loss) << "p=" << p << " n=" << n;
            EXPECT_EQ(second_sums.score_sum, single_second_sums.score_sum) << "p=" << p << " n=" << n;
        }
}

// What the scoring passes write at residuals r: s = w clip(r), c = w kappa
// (unless c was not asked for: still the sentinel), and their sums and
// counts, the changed rows against c_gram exactly.
template <class T>
void expect_scored(const char* what, const Rows<T>& rows, const std::vector<T>& r, T tau, T h,
                   const std::vector<T>& c_gram, const std::vector<T>& s, const std::vector<T>& c, bool with_curvature,
                   const cpu::fast::ScoreSums& sums) {
    double score = 0.0, magnitude = 0.0;
    std::int64_t weighted = 0, changed = 0;
    for (std::int64_t i = 0; i < rows.n; ++i) {
        const double ri = double(r[i]), wi = double(rows.w[i]);
        ASSERT_NEAR(double(s[i]), wi * clip(ri, double(tau)), 8.0 * eps<T>() * 2.0)
            << what << " p=" << rows.p << " row " << i;
        score += double(s[i]);
        magnitude += wi * double(tau);
        if (!with_curvature) {
            ASSERT_EQ(c[i], T(-7)) << what << ": curvature written without c, p=" << rows.p << " row " << i;
            continue;
        }
        ASSERT_NEAR(double(c[i]), wi * kappa(ri, double(tau), double(h)),
                    8.0 * eps<T>() * (1.0 + std::fabs(ri) / double(h)))
            << what << " curvature p=" << rows.p << " row " << i;
        weighted += c[i] > T(0) ? 1 : 0;
        changed += c[i] != c_gram[i] ? 1 : 0;
    }
    EXPECT_NEAR(sums.score_sum, score, eps<T>() * (double(rows.n) + 8.0) * (magnitude + 1.0))
        << what << " p=" << rows.p << " n=" << rows.n;
    if (with_curvature) {
        EXPECT_EQ(sums.weighted_rows, weighted) << what << " p=" << rows.p << " n=" << rows.n;
        EXPECT_EQ(sums.changed, changed) << what << " p=" << rows.p << " n=" << rows.n;
    }
}

TYPED_TEST(NarrowKernels, StepResidualAndAdvancePassesMatchDirectSums) {
    using T = TypeParam;
    const T tau = T(1.345), b = T(-0.2), h = T(0.3);
    for (std::int64_t p : widths<T>())
        for (std::int64_t n : kRowCounts) {
            Rows<T> rows(n, p, static_cast<unsigned>(7 * p + n));
            std::vector<T> dz(n), s(n), product(p), r(n), r_next(n), c(n), c_gram(n, T(0));
            const auto panels = rows.panels();
            double step_loss = -1.0;
            auto step = [&] {
                return cpu::fast::narrow_step_pass<T>(
                    {.rows = {n, p, panels.data()},
                     .step = rows.v.data(),
                     .b = b,
                     .r = rows.r.data(),
                     .scoring = {.w = rows.w.data(), .tau = tau, .h = h, .c_gram = c_gram.data(), .s = s.data(), .c = c.data()},
                     .dz = dz.data(),
                     .r_next = r_next.data(),
                     .product = product.data(),
                     .loss = &step_loss});
            };
            auto sums = step();
            // The full step's loss, summed as the line search's loss pass sums it at t = 1.
            ASSERT_EQ(step_loss, cpu::fast::loss_sum(n, rows.r.data(), dz.data(), T(1), rows.w.data(), tau))
                << "step loss p=" << p << " n=" << n;
            for (std::int64_t i = 0; i < n; ++i) {
                const double tol = 4.0 * eps<T>() * (rows.dot_magnitude(i, rows.v) + 1.0);
                ASSERT_NEAR(double(dz[i]), rows.dot(i, rows.v) + double(b), tol) << "step p=" << p << " row " << i;
                ASSERT_EQ(r_next[i], rows.r[i] + dz[i]) << "step p=" << p << " row " << i;
            }
            expect_scored("step", rows, r_next, tau, h, c_gram, s, c, true, sums);
            expect_product(rows, s, product, "step");
            // Changed rows: counted against the Gram's weights, exactly.
            for (std::int64_t i = 0; i < n; ++i) c_gram[i] = c[i] + (i % 3 == 1 ? T(0.5) : T(0));
            expect_scored("step against other Gram weights", rows, r_next, tau, h, c_gram, s, c, true, step());

            // The residual pass scores r = y - (X v + b) the same way: with
            // curvature (and its counts) and without.
            for (bool with_curvature : {true, false}) {
                std::fill(c.begin(), c.end(), T(-7));
                const auto start = cpu::fast::narrow_residual_pass<T>({.rows = {n, p, panels.data()},
                                                                       .theta = rows.v.data(),
                                                                       .b = b,
                                                                       .y = rows.y.data(),
                                                                       .scoring = {.w = rows.w.data(),
                                                                                   .tau = tau,
                                                                                   .h = h,
                                                                                   .c_gram = c_gram.data(),
                                                                                   .s = s.data(),
                                                                                   .c = with_curvature ? c.data() : nullptr},
                                                                       .r = r.data(),
                                                                       .product = product.data()});
                for (std::int64_t i = 0; i < n; ++i) {
                    const double tol =
                        4.0 * eps<T>() * (rows.dot_magnitude(i, rows.v) + std::fabs(double(rows.y[i])) + 1.0);
                    ASSERT_NEAR(double(r[i]), double(rows.y[i]) - (rows.dot(i, rows.v) + double(b)), tol)
                        << "residual p=" << p << " row " << i;
                }
                expect_scored("residual", rows, r, tau, h, c_gram, s, c, with_curvature, start);
                expect_product(rows, s, product, "residual");
            }

            // The damped-step pass: r += t dz in place, scored like the
            // step pass, with X' s.
            const T t = T(0.375);
            std::vector<T> advanced = rows.r;
            const auto moved = cpu::fast::narrow_advance_pass<T>(
                {.rows = {n, p, panels.data()},
                 .t = t,
                 .dz = dz.data(),
                 .r = advanced.data(),
                 .scoring = {.w = rows.w.data(), .tau = tau, .h = h, .c_gram = c_gram.data(), .s = s.data(), .c = c.data()},
                 .product = product.data()});
            for (std::int64_t i = 0; i < n; ++i) {
                // r + t dz, rounded once (a fused multiply-add) or twice.
                const double exact = double(rows.r[i]) + double(t) * double(dz[i]);
                ASSERT_NEAR(double(advanced[i]), exact,
                            2.0 * eps<T>() * (std::fabs(double(rows.r[i])) + std::fabs(double(t) * double(dz[i]))))
                    << "advance p=" << p << " row " << i;
            }
            expect_scored("advance", rows, advanced, tau, h, c_gram, s, c, true, moved);
            expect_product(rows, s, product, "advance");
        }
}

}  // namespace

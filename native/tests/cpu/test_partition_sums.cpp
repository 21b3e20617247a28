// Engine::partition_sums (cpu/partition_sums.hpp): a partition's data terms
// against a plain loop over its rows, partitions adding up to the whole
// batch, only the requested terms written, and every bad input refused
// before any output is written.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

#include "core/huber.hpp"
#include "core/status.hpp"
#include "cpu/engine.hpp"
#include "test_fixtures.hpp"

namespace rh::test {
namespace {

// Z = [X, 1], weights and a point, as a caller of partition_sums holds them.
struct Partitioned {
    std::int64_t rows, d;
    std::vector<double> Z, y, w, theta;
    core::BatchView<double> view(std::int64_t begin, std::int64_t end, bool weighted = true) const {
        return {Z.data() + begin * d, y.data() + begin, weighted ? w.data() + begin : nullptr, end - begin, d};
    }
};

Partitioned partitioned(std::int64_t rows = 300, std::int64_t features = 4) {
    const Batch<double> batch = linear_batch<double>(rows, features, 7);
    Partitioned P{rows, features + 1, {}, batch.y, std::vector<double>(rows), std::vector<double>(features + 1)};
    P.Z.resize(rows * P.d);
    for (std::int64_t i = 0; i < rows; ++i) {
        for (std::int64_t j = 0; j < features; ++j) P.Z[i * P.d + j] = batch.X[i * features + j];
        P.Z[i * P.d + features] = 1.0;
        P.w[i] = 0.5 + (i % 5) * 0.25;
    }
    for (std::int64_t j = 0; j < P.d; ++j) P.theta[j] = 0.2 * (j + 1);
    return P;
}

struct Sums {
    double loss = 0.0, weight = 0.0;
    std::vector<double> score, curvature, unit;
    explicit Sums(std::int64_t d) : score(d, 0.0), curvature(d * d, 0.0), unit(d * d, 0.0) {}
};

constexpr double kTau = 1.345, kBandwidth = 0.3;

// The definitions of partition_sums.hpp, one row at a time.
Sums by_rows(const Partitioned& P) {
    Sums sums(P.d);
    for (std::int64_t i = 0; i < P.rows; ++i) {
        const double* z = P.Z.data() + i * P.d;
        double fitted = 0.0;
        for (std::int64_t j = 0; j < P.d; ++j) fitted += z[j] * P.theta[j];
        const double r = P.y[i] - fitted;
        sums.loss += P.w[i] * core::huber_loss(r, kTau);
        sums.weight += P.w[i];
        const double score = P.w[i] * core::huber_score(r, kTau);
        const double kappa = P.w[i] * core::smoothed_curvature(r, kTau, kBandwidth);
        for (std::int64_t j = 0; j < P.d; ++j) {
            sums.score[j] += z[j] * score;
            for (std::int64_t k = 0; k < P.d; ++k) {
                sums.curvature[j * P.d + k] += z[j] * kappa * z[k];
                sums.unit[j * P.d + k] += z[j] * P.w[i] * z[k];
            }
        }
    }
    return sums;
}

Sums engine_sums(cpu::Engine<double>& engine, const Partitioned& P, std::int64_t begin, std::int64_t end,
                 cpu::PartitionSumsRequest request = {true, true, true, true}) {
    Sums sums(P.d);
    cpu::PartitionSumsOutput<double> out;
    out.score_product = sums.score.data();
    out.curvature_gram = sums.curvature.data();
    out.unit_gram = sums.unit.data();
    engine.partition_sums(P.view(begin, end), {P.theta.data(), kTau, kBandwidth}, request, out);
    sums.loss = out.loss_sum;
    sums.weight = out.weight_sum;
    return sums;
}

void expect_near(const std::vector<double>& a, const std::vector<double>& b, double rtol) {
    ASSERT_EQ(a.size(), b.size());
    for (std::size_t k = 0; k < a.size(); ++k) EXPECT_NEAR(a[k], b[k], rtol * (1.0 + std::abs(b[k]))) << k;
}

TEST(PartitionSums, MatchTheirDefinitionRowByRow) {
    const Partitioned P = partitioned();
    cpu::Engine<double> engine(1);
    const Sums got = engine_sums(engine, P, 0, P.rows), want = by_rows(P);
    EXPECT_NEAR(got.loss, want.loss, 1e-12 * want.loss);
    EXPECT_NEAR(got.weight, want.weight, 1e-12 * want.weight);
    expect_near(got.score, want.score, 1e-12);
    expect_near(got.curvature, want.curvature, 1e-12);
    expect_near(got.unit, want.unit, 1e-12);
    // the point matters: some rows are outliers, some in the kappa ramp
    double unit_trace = 0.0, curvature_trace = 0.0;
    for (std::int64_t j = 0; j < P.d; ++j) {
        unit_trace += want.unit[j * P.d + j];
        curvature_trace += want.curvature[j * P.d + j];
    }
    EXPECT_LT(curvature_trace, 0.99 * unit_trace);
}

TEST(PartitionSums, PartitionsAddUpToTheWholeBatch) {
    const Partitioned P = partitioned();
    cpu::Engine<double> engine(2);
    const Sums whole = engine_sums(engine, P, 0, P.rows);
    Sums added(P.d);
    for (auto [begin, end] : {std::pair<std::int64_t, std::int64_t>{0, 97}, {97, 97}, {97, 250}, {250, 300}}) {
        const Sums part = engine_sums(engine, P, begin, end);
        added.loss += part.loss;
        added.weight += part.weight;
        for (std::size_t k = 0; k < added.score.size(); ++k) added.score[k] += part.score[k];
        for (std::size_t k = 0; k < added.curvature.size(); ++k) {
            added.curvature[k] += part.curvature[k];
            added.unit[k] += part.unit[k];
        }
    }
    EXPECT_NEAR(added.loss, whole.loss, 1e-12 * whole.loss);
    EXPECT_NEAR(added.weight, whole.weight, 1e-12 * whole.weight);
    expect_near(added.score, whole.score, 1e-12);
    expect_near(added.curvature, whole.curvature, 1e-12);
    expect_near(added.unit, whole.unit, 1e-12);
}

TEST(PartitionSums, OnlyTheRequestedTermsAreWritten) {
    const Partitioned P = partitioned(40, 3);
    cpu::Engine<double> engine(1);
    const double sentinel = -12345.0;
    std::vector<double> score(P.d, sentinel), curvature(P.d * P.d, sentinel);
    cpu::PartitionSumsOutput<double> out;
    out.score_product = score.data();
    out.curvature_gram = curvature.data();
    engine.partition_sums(P.view(0, P.rows), {P.theta.data(), kTau, kBandwidth}, {true, false, false, false}, out);
    EXPECT_GT(out.loss_sum, 0.0);
    for (double v : score) EXPECT_EQ(v, sentinel);
    for (double v : curvature) EXPECT_EQ(v, sentinel);
    engine.partition_sums(P.view(0, P.rows), {P.theta.data(), kTau, kBandwidth}, {false, true, false, false}, out);
    EXPECT_EQ(out.loss_sum, 0.0);
    EXPECT_NE(score[0], sentinel);
    for (double v : curvature) EXPECT_EQ(v, sentinel);
}

TEST(PartitionSums, UnitWeightsWhenNoneAreGiven) {
    Partitioned P = partitioned(50, 2);
    cpu::Engine<double> engine(1);
    Sums unweighted(P.d);
    cpu::PartitionSumsOutput<double> out;
    out.unit_gram = unweighted.unit.data();
    engine.partition_sums(P.view(0, P.rows, false), {P.theta.data(), kTau, kBandwidth}, {true, false, false, true},
                          out);
    EXPECT_EQ(out.weight_sum, 50.0);
    EXPECT_EQ(unweighted.unit[P.d * P.d - 1], 50.0);  // the intercept column's sum of squares
    std::fill(P.w.begin(), P.w.end(), 1.0);
    EXPECT_NEAR(out.loss_sum, by_rows(P).loss, 1e-12 * out.loss_sum);
}

TEST(PartitionSums, AZeroWeightPartitionIsAccepted) {
    Partitioned P = partitioned(30, 2);
    std::fill(P.w.begin(), P.w.end(), 0.0);
    cpu::Engine<double> engine(1);
    const Sums sums = engine_sums(engine, P, 0, P.rows);
    EXPECT_EQ(sums.weight, 0.0);
    EXPECT_EQ(sums.loss, 0.0);
    for (double v : sums.unit) EXPECT_EQ(v, 0.0);
}

// Each bad input raises EngineError with its status; the outputs keep their
// sentinel (nothing is written before the checks pass).
TEST(PartitionSums, BadInputIsRefusedBeforeAnyWrite) {
    struct Case {
        const char* name;
        core::Status status;
        void (*spoil)(Partitioned&, double&, double&);
    };
    const Case cases[] = {
        {"inf in Z", core::Status::non_finite_input,
         [](Partitioned& P, double&, double&) { P.Z[7] = std::numeric_limits<double>::infinity(); }},
        {"nan in y", core::Status::non_finite_input,
         [](Partitioned& P, double&, double&) { P.y[3] = std::numeric_limits<double>::quiet_NaN(); }},
        {"negative weight", core::Status::invalid_weights, [](Partitioned& P, double&, double&) { P.w[5] = -1.0; }},
        {"nan theta", core::Status::invalid_argument,
         [](Partitioned& P, double&, double&) { P.theta[1] = std::numeric_limits<double>::quiet_NaN(); }},
        {"tau", core::Status::invalid_argument, [](Partitioned&, double& tau, double&) { tau = 0.0; }},
        {"bandwidth", core::Status::invalid_argument, [](Partitioned&, double&, double& h) { h = -1.0; }},
    };
    for (const Case& c : cases) {
        Partitioned P = partitioned(60, 3);
        double tau = kTau, h = kBandwidth;
        c.spoil(P, tau, h);
        cpu::Engine<double> engine(1);
        std::vector<double> score(P.d, -7.0);
        cpu::PartitionSumsOutput<double> out;
        out.score_product = score.data();
        out.loss_sum = -7.0;
        try {
            engine.partition_sums(P.view(0, P.rows), {P.theta.data(), tau, h}, {true, true, false, false}, out);
            ADD_FAILURE() << c.name << ": no error";
        } catch (const core::EngineError& error) {
            EXPECT_EQ(error.status(), c.status) << c.name << ": " << error.what();
        }
        EXPECT_EQ(out.loss_sum, -7.0) << c.name;
        for (double v : score) EXPECT_EQ(v, -7.0) << c.name;
    }
}

TEST(PartitionSums, ARequestedTermNeedsItsOutput) {
    const Partitioned P = partitioned(20, 2);
    cpu::Engine<double> engine(1);
    cpu::PartitionSumsOutput<double> out;  // no arrays
    EXPECT_THROW(engine.partition_sums(P.view(0, P.rows), {P.theta.data(), kTau, kBandwidth},
                                       {false, false, true, false}, out),
                 core::EngineError);
}

TEST(PartitionSums, Float32FormsItsTermsInFloat32) {
    const Batch<float> batch = linear_batch<float>(64, 3, 3);
    std::vector<float> Z(batch.X), theta{0.1f, 0.2f, 0.3f}, score(3);
    cpu::Engine<float> engine(1);
    cpu::PartitionSumsOutput<float> out;
    out.score_product = score.data();
    engine.partition_sums({Z.data(), batch.y.data(), nullptr, 64, 3}, {theta.data(), kTau, kBandwidth},
                          {true, true, false, false}, out);
    EXPECT_EQ(out.loss_sum, static_cast<double>(static_cast<float>(out.loss_sum)));  // a float32 sum
    EXPECT_TRUE(std::isfinite(score[0]));
}

}  // namespace
}  // namespace rh::test

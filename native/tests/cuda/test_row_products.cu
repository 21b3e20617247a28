// The row passes that form X's products themselves (row_products.cu, eight
// lanes a row) against a host computation of the same rows:
//  * launch_start_rows (the point pass): r = y - (X point + b) against a
//    long-double one, the loss sum against the host's over the device's r,
//    and the batch check's counts of non-finite X and y placed in the rows;
//  * launch_step_line_search (the halving pass): dz = X step[:p] + step[p]
//    against a long-double dot product, each halving's loss sum against the
//    host's sum over the device's dz;
//  * launch_lamm_trial_rows (LAMM's trial pass): each trial's residual
//    r - (X Delta_k + b_k) against a long-double one, each trial's loss sum
//    against the host's over the device's residuals.
// Every column-block count they dispatch (p = 0 .. 64) and its boundaries,
// with and without the intercept, row counts that are not a multiple of
// their 4-row chunks and one past row_blocks' cap of blocks, float and
// double. They write their rows only and give the same bits on a second
// launch; p = 65 is refused on the host. Skip without a device.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <limits>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "core/huber.hpp"
#include "device_buffer.cuh"
#include "launch.cuh"
#include "row_products.cuh"

namespace {

using rh::cuda::testing::device_count;
using rh::cuda::testing::DeviceBuffer;

struct Shape {
    std::int64_t n, p;
    bool intercept;
};

const Shape kShapes[] = {
    {1, 0, true},         // the intercept alone, one row
    {9, 1, false},        // one column
    {1001, 7, false},     // one column block, n = 4 k + 1
    {257, 8, true},       // one whole block
    {258, 9, true},       // two blocks, the second one column
    {4096, 16, true},     // the latency class
    {777, 17, false},     // three blocks
    {333, 40, false},     // five whole blocks
    {70001, 32, true},    // the streaming class's width
    {130, 47, true},      // six blocks, the last partial
    {203, 56, false},     // seven whole blocks
    {517, 63, true},      // eight blocks
    {66, 64, false},      // p = 64, the widest; fewer rows than a warp's chunk stride
    {300001, 3, true},    // past row_blocks' cap: each warp strides over about 9 chunks
};

// A batch's rows on the host and the device, and a pass's sums.
template <class T>
struct Rows {
    std::int64_t n, p;
    std::vector<T> X, r, w;
    DeviceBuffer<T> dX, dr, dw;
    int blocks;

    Rows(const Shape& shape, std::mt19937& generator)
        : n(shape.n), p(shape.p), X(static_cast<std::size_t>(n * p)), r(static_cast<std::size_t>(n)),
          w(static_cast<std::size_t>(n)), dX(X.size()), dr(r.size()), dw(w.size()), blocks(rh::cuda::row_blocks(n)) {
        std::normal_distribution<double> normal;
        std::uniform_real_distribution<double> uniform(0.0, 2.0);
        for (auto& x : X) x = static_cast<T>(normal(generator));
        for (std::int64_t i = 0; i < n; ++i) {
            r[i] = static_cast<T>(2.0 * normal(generator));
            w[i] = (i % 7 == 3) ? T(0) : static_cast<T>(uniform(generator));
        }
        dX.upload(X);
        dr.upload(r);
        dw.upload(w);
    }

    // x_i' v[:p] + extra in long double, and the sum of its terms' magnitudes.
    long double product(std::int64_t i, const T* v, T extra, double& magnitude) const {
        long double exact = static_cast<long double>(extra);
        magnitude = std::fabs(static_cast<double>(extra));
        for (std::int64_t j = 0; j < p; ++j) {
            const double term = static_cast<double>(X[i * p + j]) * static_cast<double>(v[j]);
            exact += static_cast<long double>(term);
            magnitude += std::fabs(term);
        }
        return exact;
    }
};

const double kUnit[2] = {6e-8, 1.2e-16};  // float, double
template <class T>
double unit() { return kUnit[sizeof(T) == 8 ? 1 : 0]; }

// sum_i w_i loss(residual(i)) in long double against the device's sum:
// each term in T (the device may contract tau a - tau^2 / 2 into an FMA),
// the sums in double.
template <class T>
void expect_loss_sum(const Rows<T>& rows, T tau, double got, const std::function<T(std::int64_t)>& residual,
                     const std::string& what) {
    const T half_tau_squared = (T(0.5) * tau) * tau;
    long double exact = 0.0L;
    double magnitude = 0.0;
    for (std::int64_t i = 0; i < rows.n; ++i) {
        const double term = static_cast<double>(rows.w[i] * rh::core::huber_loss_fast(residual(i), tau, half_tau_squared));
        exact += static_cast<long double>(term);
        magnitude += std::fabs(term);
    }
    const double tolerance = 8.0 * unit<T>() * magnitude + 64.0 * 1.2e-16 * magnitude + 1e-300;
    ASSERT_NEAR(got, static_cast<double>(exact), tolerance) << what << ", p = " << rows.p << ", n = " << rows.n;
}

template <class T>
void expect_same_bits(const std::vector<T>& a, const std::vector<T>& b, const char* what) {
    ASSERT_EQ(a.size(), b.size());
    for (std::size_t i = 0; i < a.size(); ++i) ASSERT_EQ(std::memcmp(&a[i], &b[i], sizeof(T)), 0) << what << " " << i;
}

constexpr int kSteps = rh::cuda::kLineSearchSteps;
constexpr int kTrials = rh::cuda::kLammTrialsPerPass;

template <class T>
void check_step_rows(const Shape& shape, unsigned seed) {
    std::mt19937 generator(seed);
    const Rows<T> rows(shape, generator);
    const std::int64_t n = rows.n, p = rows.p, d = p + (shape.intercept ? 1 : 0);
    std::normal_distribution<double> normal;
    std::vector<T> step(static_cast<std::size_t>(d));
    for (auto& s : step) s = static_cast<T>(0.5 * normal(generator));
    const T tau = T(1.345);

    DeviceBuffer<T> dstep(step.size()), ddz(static_cast<std::size_t>(n + 4));
    DeviceBuffer<double> partials(static_cast<std::size_t>(rows.blocks) * kSteps), sums(kSteps);
    dstep.upload(step);
    const T sentinel = T(-12345.5);
    ddz.upload(std::vector<T>(static_cast<std::size_t>(n + 4), sentinel));
    const T* b = shape.intercept ? dstep.data + p : nullptr;
    auto launch = [&] {
        rh::cuda::launch_step_line_search<T>(nullptr, n, p, rows.dX.data, dstep.data, b, rows.dr.data, rows.dw.data,
                                             tau, ddz.data, partials.data);
        rh::cuda::launch_finish_sums(nullptr, partials.data, rows.blocks, kSteps, sums.data);
        ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    };
    launch();
    const std::vector<T> dz = ddz.download(static_cast<std::size_t>(n + 4));
    const std::vector<double> losses = sums.download(kSteps);

    const T intercept = shape.intercept ? step[p] : T(0);
    for (std::int64_t i = 0; i < n; ++i) {
        double magnitude = 0.0;
        const long double exact = rows.product(i, step.data(), intercept, magnitude);
        // ceil(p / 8) FMAs, 3 butterfly adds and the intercept's add in T
        ASSERT_NEAR(static_cast<double>(dz[i]), static_cast<double>(exact), 16.0 * unit<T>() * magnitude + 1e-300)
            << "dz of row " << i << ", p = " << p << ", n = " << n;
    }
    for (std::int64_t i = n; i < n + 4; ++i) EXPECT_EQ(dz[i], sentinel) << "dz past the batch's rows was written";
    for (int k = 0; k < kSteps; ++k) {
        const T t = static_cast<T>(std::ldexp(1.0, -k));
        expect_loss_sum<T>(rows, tau, losses[k], [&](std::int64_t i) { return std::fma(t, dz[i], rows.r[i]); },
                           "halving k = " + std::to_string(k));
    }

    launch();
    expect_same_bits(dz, ddz.download(static_cast<std::size_t>(n + 4)), "dz");
    expect_same_bits(losses, sums.download(kSteps), "loss");

    // X, w and tau from the batch's constants in device memory (a reused
    // graph's launch): the launch's own arguments are decoys (zeros of X's
    // and w's sizes, another tau), and the bits are the same.
    DeviceBuffer<T> decoy_X(static_cast<std::size_t>(n * (p > 0 ? p : 1))), decoy_w(static_cast<std::size_t>(n));
    decoy_X.upload(std::vector<T>(static_cast<std::size_t>(n * (p > 0 ? p : 1)), T(0)));
    decoy_w.upload(std::vector<T>(static_cast<std::size_t>(n), T(0)));
    rh::cuda::BatchConstants<T> constants;
    constants.X = rows.dX.data;
    constants.w = rows.dw.data;
    constants.tau = tau;
    DeviceBuffer<rh::cuda::BatchConstants<T>> dconstants(1);
    dconstants.upload({constants});
    ddz.upload(std::vector<T>(static_cast<std::size_t>(n + 4), sentinel));
    rh::cuda::launch_step_line_search<T>(nullptr, n, p, decoy_X.data, dstep.data, b, rows.dr.data, decoy_w.data,
                                         T(0.5), ddz.data, partials.data, dconstants.data);
    rh::cuda::launch_finish_sums(nullptr, partials.data, rows.blocks, kSteps, sums.data);
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    expect_same_bits(dz, ddz.download(static_cast<std::size_t>(n + 4)), "dz with the constants on the device");
    expect_same_bits(losses, sums.download(kSteps), "loss with the constants on the device");
}

template <class T>
void check_trial_rows(const Shape& shape, unsigned seed) {
    std::mt19937 generator(seed);
    const Rows<T> rows(shape, generator);
    const std::int64_t n = rows.n, p = rows.p;
    std::normal_distribution<double> normal;
    // the trials' feature changes (p x kTrials, column-major), then their intercept changes
    std::vector<T> changes(static_cast<std::size_t>(p * kTrials + kTrials));
    for (auto& c : changes) c = static_cast<T>(0.5 * normal(generator));
    const T tau = T(1.345);

    DeviceBuffer<T> dchanges(changes.size()), dtrials(static_cast<std::size_t>(n * kTrials + 4));
    DeviceBuffer<double> partials(static_cast<std::size_t>(rows.blocks) * kTrials), sums(kTrials);
    dchanges.upload(changes);
    const T sentinel = T(-12345.5);
    dtrials.upload(std::vector<T>(static_cast<std::size_t>(n * kTrials + 4), sentinel));
    const T* b = shape.intercept ? dchanges.data + p * kTrials : nullptr;
    auto launch = [&] {
        rh::cuda::launch_lamm_trial_rows<T>(nullptr, n, p, rows.dX.data, dchanges.data, b, rows.dr.data,
                                            rows.dw.data, tau, dtrials.data, partials.data);
        rh::cuda::launch_finish_sums(nullptr, partials.data, rows.blocks, kTrials, sums.data);
        ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    };
    launch();
    const std::vector<T> trials = dtrials.download(static_cast<std::size_t>(n * kTrials + 4));
    const std::vector<double> losses = sums.download(kTrials);

    for (int k = 0; k < kTrials; ++k) {
        const T* delta = changes.data() + k * p;
        const T intercept_change = shape.intercept ? changes[p * kTrials + k] : T(0);
        for (std::int64_t i = 0; i < n; ++i) {
            double magnitude = 0.0;
            const long double exact =
                static_cast<long double>(rows.r[i]) - rows.product(i, delta, intercept_change, magnitude);
            magnitude += std::fabs(static_cast<double>(rows.r[i]));
            // the product as dz's, then one subtraction in T
            ASSERT_NEAR(static_cast<double>(trials[i + k * n]), static_cast<double>(exact),
                        16.0 * unit<T>() * magnitude + 1e-300)
                << "trial " << k << "'s residual of row " << i << ", p = " << p << ", n = " << n;
        }
        expect_loss_sum<T>(rows, tau, losses[k], [&](std::int64_t i) { return trials[i + k * n]; },
                           "trial " + std::to_string(k));
    }
    for (std::int64_t e = n * kTrials; e < n * kTrials + 4; ++e)
        EXPECT_EQ(trials[e], sentinel) << "past the trials' residuals was written";

    launch();
    expect_same_bits(trials, dtrials.download(static_cast<std::size_t>(n * kTrials + 4)), "trial residual");
    expect_same_bits(losses, sums.download(kTrials), "trial loss");
}

// launch_start_rows: r = y - (x' point + b) and the loss sum against the
// host's; with the check, X's and y's non-finite entries counted (none in
// clean rows; `poisoned`: a NaN and an infinity placed in X, one in y, when
// the batch has rows enough), the counts summed as the engine sums them;
// without it, the check's partials untouched.
template <class T>
void check_start_rows(const Shape& shape, unsigned seed, bool with_check, bool poisoned) {
    std::mt19937 generator(seed);
    Rows<T> rows(shape, generator);
    const std::int64_t n = rows.n, p = rows.p, d = p + (shape.intercept ? 1 : 0);
    std::normal_distribution<double> normal;
    std::vector<T> point(static_cast<std::size_t>(d)), y(static_cast<std::size_t>(n));
    for (auto& v : point) v = static_cast<T>(0.5 * normal(generator));
    for (auto& v : y) v = static_cast<T>(3.0 * normal(generator));
    double bad_x = 0, bad_y = 0;
    if (poisoned && p > 0 && n > 2) {
        rows.X[1 * p + (p - 1)] = std::numeric_limits<T>::quiet_NaN();
        rows.X[(n - 1) * p] = -std::numeric_limits<T>::infinity();
        y[n / 2] = std::numeric_limits<T>::infinity();
        bad_x = 2;
        bad_y = 1;
        rows.dX.upload(rows.X);
    }
    const T tau = T(1.345);
    constexpr int C = rh::cuda::kBatchCheckSums;
    DeviceBuffer<T> dpoint(point.size()), dy(y.size()), dr(static_cast<std::size_t>(n + 4));
    DeviceBuffer<double> partials(static_cast<std::size_t>(rows.blocks) * (1 + C)), sums(1), check_sums(C);
    dpoint.upload(point);
    dy.upload(y);
    const T sentinel = T(-12345.5);
    dr.upload(std::vector<T>(static_cast<std::size_t>(n + 4), sentinel));
    partials.upload(std::vector<double>(static_cast<std::size_t>(rows.blocks) * (1 + C), -7.0));
    const T* b = shape.intercept ? dpoint.data + p : nullptr;
    double* check_partials = partials.data + rows.blocks;
    rh::cuda::launch_start_rows<T>(nullptr, n, p, rows.dX.data, dpoint.data, b, dy.data, rows.dw.data, tau, dr.data,
                                   partials.data, with_check ? check_partials : nullptr);
    rh::cuda::launch_finish_sums(nullptr, partials.data, rows.blocks, 1, sums.data);
    if (with_check) rh::cuda::launch_finish_sums(nullptr, check_partials, rows.blocks, C, check_sums.data);
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    const std::vector<T> r = dr.download(static_cast<std::size_t>(n + 4));
    const std::vector<double> loss = sums.download(1);

    const T intercept = shape.intercept ? point[p] : T(0);
    for (std::int64_t i = 0; i < n; ++i) {
        double magnitude = 0.0;
        const long double exact = static_cast<long double>(y[i]) - rows.product(i, point.data(), intercept, magnitude);
        if (!std::isfinite(static_cast<double>(exact))) continue;  // the rows the check is to refuse
        magnitude += std::fabs(static_cast<double>(y[i]));
        ASSERT_NEAR(static_cast<double>(r[i]), static_cast<double>(exact), 16.0 * unit<T>() * magnitude + 1e-300)
            << "r of row " << i << ", p = " << p << ", n = " << n;
    }
    for (std::int64_t i = n; i < n + 4; ++i) EXPECT_EQ(r[i], sentinel) << "r past the batch's rows was written";
    if (bad_x == 0) expect_loss_sum<T>(rows, tau, loss[0], [&](std::int64_t i) { return r[i]; }, "the point's loss");

    if (!with_check) {
        const std::vector<double> check = partials.download(static_cast<std::size_t>(rows.blocks) * (1 + C));
        for (std::int64_t e = rows.blocks; e < rows.blocks * (1 + C); ++e)
            ASSERT_EQ(check[e], -7.0) << "the check's partials were written without the check";
        return;
    }
    const std::vector<double> counted = check_sums.download(C);
    EXPECT_EQ(counted[rh::cuda::kNonFiniteX], bad_x) << "p = " << p << ", n = " << n;
    EXPECT_EQ(counted[rh::cuda::kNonFiniteY], bad_y) << "p = " << p << ", n = " << n;
    for (int k : {rh::cuda::kNonFiniteW, rh::cuda::kNegativeW, rh::cuda::kPositiveW, rh::cuda::kWeightSum})
        EXPECT_EQ(counted[k], 0.0) << "sum " << k;
}

TEST(CudaRowProducts, StartRowsMatchTheHostAndCountTheBatchsNonFiniteValues) {
    if (device_count() == 0) GTEST_SKIP() << "no CUDA device";
    unsigned seed = 401;
    for (const Shape& shape : kShapes) {
        for (const auto [with_check, poisoned] : {std::pair{false, false}, {true, false}, {true, true}}) {
            check_start_rows<double>(shape, seed++, with_check, poisoned);
            check_start_rows<float>(shape, seed++, with_check, poisoned);
        }
    }
}

TEST(CudaRowProducts, StepLineSearchMatchesTheHost) {
    if (device_count() == 0) GTEST_SKIP() << "no CUDA device";
    unsigned seed = 1;
    for (const Shape& shape : kShapes) {
        check_step_rows<double>(shape, seed++);
        check_step_rows<float>(shape, seed++);
    }
}

TEST(CudaRowProducts, LammTrialRowsMatchTheHost) {
    if (device_count() == 0) GTEST_SKIP() << "no CUDA device";
    unsigned seed = 201;
    for (const Shape& shape : kShapes) {
        check_trial_rows<double>(shape, seed++);
        check_trial_rows<float>(shape, seed++);
    }
}

// Host-side checks, before any launch: no device needed.
void expect_refusal(const std::function<void()>& launch, const char* name) {
    try {
        launch();
        FAIL() << name << " launched p = kRowProductColumns + 1";
    } catch (const std::exception& error) {
        EXPECT_NE(std::string(error.what()).find(std::string(name) + ": p must be 0 to 64"), std::string::npos)
            << error.what();
    }
}

TEST(CudaRowProducts, RefuseMoreColumnsThanTheirBlocks) {
    constexpr std::int64_t wide = rh::cuda::kRowProductColumns + 1;
    expect_refusal([] { rh::cuda::launch_step_line_search<double>(nullptr, 10, wide, nullptr, nullptr, nullptr, nullptr,
                                                                  nullptr, 1.0, nullptr, nullptr); },
                   "launch_step_line_search");
    expect_refusal([] { rh::cuda::launch_lamm_trial_rows<float>(nullptr, 10, wide, nullptr, nullptr, nullptr, nullptr,
                                                                nullptr, 1.0f, nullptr, nullptr); },
                   "launch_lamm_trial_rows");
    expect_refusal([] { rh::cuda::launch_start_rows<double>(nullptr, 10, wide, nullptr, nullptr, nullptr, nullptr,
                                                            nullptr, 1.0, nullptr, nullptr, nullptr); },
                   "launch_start_rows");
}

}  // namespace

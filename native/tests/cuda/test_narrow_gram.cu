// The narrow Gram (gram_kernels.cu, on the tensor cores) against a host sum
// of the same products: every column-block count it dispatches (d = 1 .. 64),
// with and without the intercept column, row counts that are not a multiple
// of the MMA's 4 rows, float and double. It writes the upper triangle only,
// and gives the same bits on a second launch. The Newton direction's fused
// pass (launch_narrow_score_gram) against a host computation of the same
// rows: the residual moved and written back, G, X' s and the sum of s.
// Skips without a device.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include "core/huber.hpp"
#include "device_buffer.cuh"
#include "gram_kernels.cuh"

namespace {

using rh::cuda::testing::device_count;
using rh::cuda::testing::DeviceBuffer;

struct Shape {
    std::int64_t n, p;
    bool intercept;
};

template <class T>
void check_gram(const Shape& shape, unsigned seed) {
    const std::int64_t n = shape.n, p = shape.p, d = p + (shape.intercept ? 1 : 0);
    std::mt19937 generator(seed);
    std::normal_distribution<double> normal;
    std::uniform_real_distribution<double> uniform(0.0, 2.0);
    std::vector<T> X(static_cast<std::size_t>(n * p)), c(static_cast<std::size_t>(n));
    for (auto& x : X) x = static_cast<T>(normal(generator));
    for (std::int64_t i = 0; i < n; ++i) c[i] = (i % 7 == 3) ? T(0) : static_cast<T>(uniform(generator));
    auto z = [&](std::int64_t i, std::int64_t j) { return j < p ? X[i * p + j] : T(1); };

    DeviceBuffer<T> dX(X.size()), dc(c.size()), dG(static_cast<std::size_t>(d * d));
    DeviceBuffer<double> partials(static_cast<std::size_t>(rh::cuda::narrow_gram_partials(d)));
    dX.upload(X);
    dc.upload(c);
    const T sentinel = T(-12345.5);
    dG.upload(std::vector<T>(static_cast<std::size_t>(d * d), sentinel));
    rh::cuda::launch_narrow_gram<T>(nullptr, n, p, shape.intercept, dX.data, dc.data, partials.data, dG.data);
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    const std::vector<T> G = dG.download(static_cast<std::size_t>(d * d));

    const double unit = sizeof(T) == 4 ? 6e-8 : 1.2e-16;
    for (std::int64_t b = 0; b < d; ++b) {
        for (std::int64_t a = 0; a < d; ++a) {
            const T got = G[a + b * d];  // column-major
            if (a > b) {
                EXPECT_EQ(got, sentinel) << "below the diagonal (" << a << ", " << b << ") was written";
                continue;
            }
            // The host sum in long double (x86's 64-bit significand): its own
            // rounding stays far below the kernel's (a double sum of 65,539
            // terms in row order was off by 1e-14 of the entry, more than
            // the kernel, whose sums are short chains: chunks, warps, blocks).
            long double exact = 0.0L;
            double magnitude = 0.0;
            for (std::int64_t i = 0; i < n; ++i) {
                const double term = static_cast<double>(static_cast<T>(c[i] * z(i, a))) * static_cast<double>(z(i, b));
                exact += static_cast<long double>(term);
                magnitude += std::fabs(term);
            }
            const double sum = static_cast<double>(exact);
            // Float results are rounded to T once; the sums themselves are in double.
            const double tolerance = 64.0 * 1.2e-16 * magnitude + unit * std::fabs(sum) + 1e-300;
            ASSERT_NEAR(static_cast<double>(got), sum, tolerance)
                << "entry (" << a << ", " << b << ") of d = " << d << ", n = " << n;
        }
    }

    rh::cuda::launch_narrow_gram<T>(nullptr, n, p, shape.intercept, dX.data, dc.data, partials.data, dG.data);
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    const std::vector<T> again = dG.download(static_cast<std::size_t>(d * d));
    for (std::size_t e = 0; e < G.size(); ++e) ASSERT_EQ(std::memcmp(&G[e], &again[e], sizeof(T)), 0) << e;
}

const Shape kShapes[] = {
    {1, 0, true},        // d = 1: the intercept alone, one row
    {1001, 7, false},    // one column block, n = 4 k + 1
    {4096, 16, true},    // the latency class
    {333, 40, false},    // d = 40: five whole blocks
    {5003, 32, true},    // d = 33: the streaming class's width
    {130, 47, true},     // d = 48
    {517, 63, true},     // d = 64: eight blocks, the widest
    {66, 60, false},     // fewer rows than a warp's chunk stride
};

TEST(CudaNarrowGram, WithADeviceMatchesTheHostSumInDouble) {
    if (device_count() == 0) GTEST_SKIP() << "no CUDA device";
    unsigned seed = 1;
    for (const Shape& shape : kShapes) check_gram<double>(shape, seed++);
}

TEST(CudaNarrowGram, WithADeviceMatchesTheHostSumInFloat) {
    if (device_count() == 0) GTEST_SKIP() << "no CUDA device";
    unsigned seed = 101;
    for (const Shape& shape : kShapes) check_gram<float>(shape, seed++);
}

TEST(CudaNarrowGram, WithADeviceSumsAStreamingBatch) {
    if (device_count() == 0) GTEST_SKIP() << "no CUDA device";
    check_gram<double>({65536 + 3, 32, true}, 7);
}

// The fused pass: the residual moved by t dz (kind 0), set to a trial's
// residuals (kind 1) or left (kind 2); then the host's rows as the kernel
// forms them, G = Z' diag(c) Z, X' s and sum(s) compared (c and s may
// differ from the host's in their last bit: the device contracts into FMAs).
template <class T>
void check_score_gram(const Shape& shape, int kind, unsigned seed) {
    const std::int64_t n = shape.n, p = shape.p, d = p + (shape.intercept ? 1 : 0);
    const T tau = T(1.345), h = T(0.25);
    std::mt19937 generator(seed);
    std::normal_distribution<double> normal;
    std::uniform_real_distribution<double> uniform(0.0, 2.0);
    std::vector<T> X(static_cast<std::size_t>(n * p)), w(n), r(n), dz(n), trials(static_cast<std::size_t>(2 * n));
    for (auto& x : X) x = static_cast<T>(normal(generator));
    for (std::int64_t i = 0; i < n; ++i) {
        w[i] = (i % 5 == 1) ? T(0) : static_cast<T>(uniform(generator));
        r[i] = static_cast<T>(2.0 * normal(generator));
        dz[i] = static_cast<T>(normal(generator));
    }
    for (auto& v : trials) v = static_cast<T>(2.0 * normal(generator));
    const double t = kind == 0 ? 0.5 : 0.0;
    const int trial = kind == 1 ? 1 : -1;
    auto z = [&](std::int64_t i, std::int64_t j) { return j < p ? X[i * p + j] : T(1); };
    std::vector<T> moved(r);
    for (std::int64_t i = 0; i < n; ++i) {
        if (kind == 0) moved[i] = std::fma(static_cast<T>(t), dz[i], r[i]);
        if (kind == 1) moved[i] = trials[i + n];
    }

    DeviceBuffer<T> dX(X.size()), dw(w.size()), dr(r.size()), ddz(dz.size()), dtrials(trials.size());
    DeviceBuffer<T> dG(static_cast<std::size_t>(d * d)), dgx(static_cast<std::size_t>(p > 0 ? p : 1));
    DeviceBuffer<double> partials(static_cast<std::size_t>(rh::cuda::narrow_gram_partials(d))), dt(1), dsum(1);
    DeviceBuffer<int> dtrial(1);
    dX.upload(X);
    dw.upload(w);
    dr.upload(r);
    ddz.upload(dz);
    dtrials.upload(trials);
    dt.upload({t});
    dtrial.upload({trial});
    dsum.upload({-1.0});
    const rh::cuda::ResidualAdvance<T> advance{ddz.data, dt.data, dtrials.data, dtrial.data};
    rh::cuda::launch_narrow_score_gram<T>(nullptr, n, p, shape.intercept, dX.data, advance, dw.data, tau, h, dr.data,
                                          partials.data, dG.data, dgx.data, dsum.data);
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    const std::vector<T> r_out = dr.download(static_cast<std::size_t>(n)), G = dG.download(static_cast<std::size_t>(d * d));
    const std::vector<T> gx = dgx.download(static_cast<std::size_t>(p > 0 ? p : 1));
    const double score_sum = dsum.download(1)[0];
    for (std::int64_t i = 0; i < n; ++i) ASSERT_EQ(r_out[i], moved[i]) << "the moved residual of row " << i;

    const T inverse_two_h = T(1) / (T(2) * h);
    std::vector<double> c(n), s(n);
    for (std::int64_t i = 0; i < n; ++i) {
        s[i] = static_cast<double>(w[i] * rh::core::huber_score(moved[i], tau));
        c[i] = static_cast<double>(w[i] * rh::core::smoothed_curvature_fast(moved[i], tau, h, inverse_two_h));
    }
    const double unit = sizeof(T) == 4 ? 6e-8 : 1.2e-16;
    const double slack = sizeof(T) == 4 ? 4e-7 : 1e-14;  // c and s to a last bit of T, then the sums' rounding
    for (std::int64_t b = 0; b < d; ++b) {
        for (std::int64_t a = 0; a <= b; ++a) {
            long double exact = 0.0L;
            double magnitude = 0.0;
            for (std::int64_t i = 0; i < n; ++i) {
                const double term = c[i] * static_cast<double>(z(i, a)) * static_cast<double>(z(i, b));
                exact += static_cast<long double>(term);
                magnitude += std::fabs(term);
            }
            const double sum = static_cast<double>(exact);
            ASSERT_NEAR(static_cast<double>(G[a + b * d]), sum, slack * magnitude + unit * std::fabs(sum) + 1e-300)
                << "G (" << a << ", " << b << "), kind " << kind;
        }
    }
    for (std::int64_t j = 0; j < d; ++j) {
        long double exact = 0.0L;
        double magnitude = 0.0;
        for (std::int64_t i = 0; i < n; ++i) {
            const double term = s[i] * static_cast<double>(z(i, j));
            exact += static_cast<long double>(term);
            magnitude += std::fabs(term);
        }
        const double sum = static_cast<double>(exact), tolerance = slack * magnitude + unit * std::fabs(sum) + 1e-300;
        if (j < p)
            ASSERT_NEAR(static_cast<double>(gx[j]), sum, tolerance) << "X' s entry " << j << ", kind " << kind;
        else
            ASSERT_NEAR(score_sum, sum, tolerance) << "the sum of s, kind " << kind;
    }
    if (!shape.intercept) EXPECT_EQ(score_sum, 0.0) << "no intercept: the sum of s is written as zero";

    // X, w, tau and h from the batch's constants in device memory (a reused
    // graph's launch), the launch's own arguments decoys (zeros of X's and
    // w's sizes, another tau and h): the same r, G, X' s and sum of s.
    {
        DeviceBuffer<T> decoy_X(X.size() ? X.size() : 1), decoy_w(w.size()), r3(r.size());
        DeviceBuffer<T> G3(static_cast<std::size_t>(d * d)), gx3(static_cast<std::size_t>(p > 0 ? p : 1));
        DeviceBuffer<double> sum3(1);
        decoy_X.upload(std::vector<T>(X.size() ? X.size() : 1, T(0)));
        decoy_w.upload(std::vector<T>(w.size(), T(0)));
        r3.upload(r);
        rh::cuda::BatchConstants<T> constants;
        constants.X = dX.data;
        constants.w = dw.data;
        constants.tau = tau;
        constants.h = h;
        DeviceBuffer<rh::cuda::BatchConstants<T>> dconstants(1);
        dconstants.upload({constants});
        rh::cuda::launch_narrow_score_gram<T>(nullptr, n, p, shape.intercept, decoy_X.data, advance, decoy_w.data,
                                              T(0.5), T(3), r3.data, partials.data, G3.data, gx3.data, sum3.data,
                                              dconstants.data);
        ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
        const std::vector<T> r_dev = r3.download(static_cast<std::size_t>(n));
        const std::vector<T> G_dev = G3.download(static_cast<std::size_t>(d * d));
        const std::vector<T> gx_dev = gx3.download(static_cast<std::size_t>(p > 0 ? p : 1));
        ASSERT_EQ(std::memcmp(r_dev.data(), r_out.data(), sizeof(T) * n), 0) << "r from the constants, kind " << kind;
        for (std::int64_t b = 0; b < d; ++b)
            for (std::int64_t a = 0; a <= b; ++a)
                ASSERT_EQ(std::memcmp(&G_dev[a + b * d], &G[a + b * d], sizeof(T)), 0)
                    << "G (" << a << ", " << b << ") from the constants, kind " << kind;
        ASSERT_EQ(std::memcmp(gx_dev.data(), gx.data(), sizeof(T) * gx.size()), 0) << "X' s from the constants";
        const double sum_dev = sum3.download(1)[0];
        ASSERT_EQ(std::memcmp(&sum_dev, &score_sum, sizeof(double)), 0) << "the sum of s from the constants";
    }

    // The unfused route on the device (score_rows, then the Gram of its c):
    // the fused pass keeps its residual and its G bit for bit.
    DeviceBuffer<T> r2(r.size()), s2(r.size()), c2(r.size()), G2(static_cast<std::size_t>(d * d));
    DeviceBuffer<double> row_partials(1024);
    r2.upload(r);
    rh::cuda::launch_score_rows<T>(nullptr, n, advance, dw.data, tau, h, r2.data, s2.data, c2.data, row_partials.data);
    rh::cuda::launch_narrow_gram<T>(nullptr, n, p, shape.intercept, dX.data, c2.data, partials.data, G2.data);
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    const std::vector<T> r_unfused = r2.download(static_cast<std::size_t>(n));
    const std::vector<T> G_unfused = G2.download(static_cast<std::size_t>(d * d));
    ASSERT_EQ(std::memcmp(r_unfused.data(), r_out.data(), sizeof(T) * n), 0) << "r against score_rows', kind " << kind;
    for (std::int64_t b = 0; b < d; ++b)
        for (std::int64_t a = 0; a <= b; ++a)
            ASSERT_EQ(std::memcmp(&G_unfused[a + b * d], &G[a + b * d], sizeof(T)), 0)
                << "G (" << a << ", " << b << ") against score_rows' c and the Gram kernel, kind " << kind;
}

TEST(CudaNarrowScoreGram, WithADeviceMatchesTheHostRowsInDouble) {
    if (device_count() == 0) GTEST_SKIP() << "no CUDA device";
    unsigned seed = 201;
    for (int kind = 0; kind < 3; ++kind) {
        check_score_gram<double>({5003, 32, true}, kind, seed++);
        check_score_gram<double>({1001, 7, false}, kind, seed++);
        check_score_gram<double>({517, 63, true}, kind, seed++);
        check_score_gram<double>({333, 0, true}, kind, seed++);  // d = 1: the intercept alone
        check_score_gram<double>({900, 12, true}, kind, seed++);  // two blocks
        check_score_gram<double>({400, 28, false}, kind, seed++);  // four blocks, no intercept
        check_score_gram<double>({300, 55, false}, kind, seed++);  // seven blocks
    }
}

TEST(CudaNarrowScoreGram, WithADeviceMatchesTheHostRowsInFloat) {
    if (device_count() == 0) GTEST_SKIP() << "no CUDA device";
    unsigned seed = 301;
    for (int kind = 0; kind < 3; ++kind) {
        check_score_gram<float>({5003, 32, true}, kind, seed++);
        check_score_gram<float>({66, 16, true}, kind, seed++);
        check_score_gram<float>({700, 47, false}, kind, seed++);  // six blocks, no intercept
    }
}

}  // namespace

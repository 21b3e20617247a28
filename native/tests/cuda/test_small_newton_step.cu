// launch_small_newton_step (the gradient, the system and the small Cholesky
// rung in one block) against the two launches it replaces,
// launch_newton_system then launch_small_cholesky_step: g, H, the step and
// every flag with the same bits, for d = 1 .. 48 (with and without an
// intercept and the L1 history term), float and double; and the same
// refusals (an indefinite system: info 1; an asymmetric information
// matrix: not symmetric), with no step written. Skip without a device.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "device_buffer.cuh"
#include "ladder_kernels.cuh"
#include "objective.cuh"
#include "small_newton_step.cuh"

namespace {

using rh::cuda::SurrogateTerms;
using rh::cuda::SystemFlags;
using rh::cuda::testing::device_count;
using rh::cuda::testing::DeviceBuffer;

// The inputs of one direction's system: theta, the previous state (J row-major),
// Z' s, the intercept's partial sums of s over `blocks`, the Gram (column-major).
struct Inputs {
    std::int64_t d = 0, p = 0;
    bool intercept = true, history = false;
    std::vector<double> theta, theta_prev, J, sign, gx, s_partials, G;
    double N = 0.0, ridge = 0.0, history_coefficient = 0.0;
};

// `indefinite`: J negative enough that H is (its first pivot negative);
// `asymmetric`: J(0, d - 1) moved.
Inputs random_inputs(std::int64_t d, bool intercept, bool history, unsigned seed, bool indefinite = false,
                     bool asymmetric = false) {
    std::mt19937_64 random(seed);
    std::normal_distribution<double> normal;
    Inputs in;
    in.d = d;
    in.intercept = intercept && d > 1;
    in.p = in.intercept ? d - 1 : d;
    in.history = history;
    auto fill = [&](std::vector<double>& v, std::int64_t n) {
        v.resize(static_cast<std::size_t>(n));
        for (double& x : v) x = normal(random);
    };
    fill(in.theta, d);
    fill(in.theta_prev, d);
    fill(in.sign, d);
    fill(in.gx, in.p);
    fill(in.s_partials, 3);
    std::vector<double> A;
    fill(A, d * d);
    in.J.assign(static_cast<std::size_t>(d * d), 0.0);
    in.G.assign(static_cast<std::size_t>(d * d), 0.0);
    for (std::int64_t i = 0; i < d; ++i)
        for (std::int64_t j = 0; j < d; ++j) {
            double sum = 0.0;
            for (std::int64_t k = 0; k < d; ++k) sum += A[i + k * d] * A[j + k * d];
            in.J[i * d + j] = indefinite ? -200.0 * sum / static_cast<double>(d) - (i == j ? 100.0 : 0.0)
                                         : 40.0 * sum / static_cast<double>(d);
            in.G[i + j * d] = 60.0 * sum / static_cast<double>(d) + (i == j ? 30.0 : 0.0);
        }
    if (asymmetric && d > 1) in.J[d - 1] += 1.0;  // row 0, column d - 1
    in.N = 250.5;
    in.ridge = 1e-6;
    in.history_coefficient = history ? 0.03 : 0.0;
    return in;
}

struct Result {
    std::vector<double> g, H, step;
    SystemFlags flags;
};

template <class T>
std::vector<T> in_t(const std::vector<double>& v) {
    return std::vector<T>(v.begin(), v.end());
}

// One direction's d-sized work on `in`, fused or as the two launches; with
// `terms_on_device`, the kernels read the surrogate terms from device memory
// (batch_constants.cuh: a reused graph's launch) and the launch's own terms
// are decoys (another N, history coefficient, ridge and previous point).
template <class T>
Result run(const Inputs& in, bool fused, bool terms_on_device = false) {
    const std::int64_t d = in.d;
    const std::size_t dd = static_cast<std::size_t>(d * d);
    DeviceBuffer<T> theta(d), theta_prev(d), J(dd), sign(d), gx(in.p), G(dd), g(d), H(dd), step(d);
    DeviceBuffer<double> s_partials(in.s_partials.size());
    DeviceBuffer<SystemFlags> flags(1);
    theta.upload(in_t<T>(in.theta));
    theta_prev.upload(in_t<T>(in.theta_prev));
    J.upload(in_t<T>(in.J));
    sign.upload(in_t<T>(in.sign));
    gx.upload(in_t<T>(in.gx));
    G.upload(in_t<T>(in.G));
    s_partials.upload(in.s_partials);
    // Every output starts as NaN: an entry a kernel leaves unwritten cannot pass for the other run's (the two
    // runs' buffers may share addresses).
    const T sentinel = std::numeric_limits<T>::quiet_NaN();
    g.upload(std::vector<T>(static_cast<std::size_t>(d), sentinel));
    H.upload(std::vector<T>(dd, sentinel));
    step.upload(std::vector<T>(static_cast<std::size_t>(d), sentinel));
    flags.upload({SystemFlags{}});
    SurrogateTerms<T> terms;
    terms.d = d;
    terms.p = in.p;
    terms.intercept = in.intercept;
    terms.theta_prev = theta_prev.data;
    terms.information = J.data;
    terms.history = sign.data;
    terms.uses_history = in.history;
    terms.history_coefficient = in.history_coefficient;
    terms.weight_sum = in.N;
    terms.ridge = static_cast<T>(in.ridge);
    const int blocks = static_cast<int>(in.s_partials.size());
    DeviceBuffer<SurrogateTerms<T>> device_terms(1);
    const SurrogateTerms<T>* on_device = nullptr;
    if (terms_on_device) {
        device_terms.upload({terms});
        on_device = device_terms.data;
        terms.theta_prev = theta.data;
        terms.uses_history = !in.history;
        terms.history_coefficient = 7.0;
        terms.weight_sum = 3.0 * in.N + 1.0;
        terms.ridge = static_cast<T>(in.ridge + 0.5);
    }
    if (fused) {
        rh::cuda::launch_small_newton_step<T>(nullptr, terms, theta.data, gx.data, s_partials.data, blocks, G.data,
                                              g.data, H.data, step.data, flags.data, on_device);
    } else {
        DeviceBuffer<double> values(static_cast<std::size_t>(rh::cuda::grid_scratch_values(d)));
        DeviceBuffer<unsigned> counters(rh::cuda::kGridCounters);
        counters.upload(std::vector<unsigned>(rh::cuda::kGridCounters, 0u));
        const rh::cuda::GridScratch scratch{values.data, counters.data};
        rh::cuda::launch_newton_system<T>(nullptr, terms, theta.data, gx.data, s_partials.data, blocks, G.data,
                                          g.data, H.data, flags.data, scratch, on_device);
        rh::cuda::launch_small_cholesky_step<T>(nullptr, d, H.data, g.data, step.data, flags.data);
        EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    }
    EXPECT_EQ(cudaGetLastError(), cudaSuccess);
    EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    Result out;
    for (T v : g.download(d)) out.g.push_back(static_cast<double>(v));
    for (T v : H.download(dd)) out.H.push_back(static_cast<double>(v));
    for (T v : step.download(d)) out.step.push_back(static_cast<double>(v));
    out.flags = flags.download(1)[0];
    return out;
}

bool same_bits(double a, double b) { return std::memcmp(&a, &b, sizeof a) == 0; }

void expect_same_bits(const std::vector<double>& a, const std::vector<double>& b, const std::string& what) {
    ASSERT_EQ(a.size(), b.size()) << what;
    for (std::size_t i = 0; i < a.size(); ++i)
        EXPECT_TRUE(same_bits(a[i], b[i])) << what << "[" << i << "] " << a[i] << " vs " << b[i];
}

template <class T>
void expect_same_result(const Result& a, const Result& b, const std::string& where) {
    expect_same_bits(a.g, b.g, where + " g");
    expect_same_bits(a.H, b.H, where + " H");
    expect_same_bits(a.step, b.step, where + " step");
    EXPECT_TRUE(same_bits(a.flags.rcond, b.flags.rcond) && same_bits(a.flags.norm1, b.flags.norm1)) << where;
    EXPECT_EQ(a.flags.step_ok, b.flags.step_ok) << where;
    EXPECT_EQ(a.flags.info, b.flags.info) << where;
}

template <class T>
void expect_fused_as_two(const Inputs& in, const std::string& where) {
    const Result two = run<T>(in, false), fused = run<T>(in, true);
    // The terms read from device memory, each form: the same bits as the two launches'.
    expect_same_result<T>(run<T>(in, true, true), two, where + " fused, terms on the device,");
    expect_same_result<T>(run<T>(in, false, true), two, where + " two launches, terms on the device,");
    expect_same_bits(fused.g, two.g, where + " g");
    expect_same_bits(fused.H, two.H, where + " H");
    for (double v : fused.g) EXPECT_TRUE(std::isfinite(v)) << where << ": a gradient entry left unwritten";
    for (double v : fused.H) EXPECT_TRUE(std::isfinite(v)) << where << ": a system entry left unwritten";
    expect_same_bits(fused.step, two.step, where + " step");
    EXPECT_TRUE(same_bits(fused.flags.rcond, two.flags.rcond)) << where << " rcond";
    EXPECT_TRUE(same_bits(fused.flags.norm1, two.flags.norm1)) << where << " norm1";
    EXPECT_EQ(fused.flags.step_ok, two.flags.step_ok) << where;
    EXPECT_EQ(fused.flags.symmetric, two.flags.symmetric) << where;
    EXPECT_EQ(fused.flags.info, two.flags.info) << where;
}

template <class T>
void every_size() {
    for (std::int64_t d = 1; d <= rh::cuda::kSmallSystem; ++d)
        for (int variant = 0; variant < 3; ++variant) {
            const bool intercept = variant != 1, history = variant == 2;
            const std::string where = std::string(sizeof(T) == 8 ? "double" : "float") + " d=" +
                                      std::to_string(d) + " variant " + std::to_string(variant);
            const Inputs in = random_inputs(d, intercept, history, static_cast<unsigned>(100 * d + variant));
            expect_fused_as_two<T>(in, where);
            EXPECT_EQ(run<T>(in, true).flags.step_ok, 1) << where << ": a regular system's step";
        }
}

TEST(CudaSmallNewtonStep, GradientSystemAndStepHaveTheBitsOfTheTwoLaunches) {
    if (device_count() == 0) GTEST_SKIP() << "no CUDA device";
    every_size<double>();
    every_size<float>();
}

TEST(CudaSmallNewtonStep, RefusesAsTheTwoLaunchesDoAndWritesNoStep) {
    if (device_count() == 0) GTEST_SKIP() << "no CUDA device";
    for (std::int64_t d : {1, 2, 17, 33, 48}) {
        const std::string where = "d=" + std::to_string(d);
        const Inputs indefinite = random_inputs(d, true, false, 11, true);
        const Result refused = run<double>(indefinite, true);
        EXPECT_EQ(refused.flags.info, 1) << where;
        EXPECT_EQ(refused.flags.step_ok, 0) << where;
        for (double v : refused.step) EXPECT_TRUE(std::isnan(v)) << where << ": a refused step was written";
        expect_fused_as_two<double>(indefinite, where + " indefinite");
        if (d == 1) continue;
        const Inputs asymmetric = random_inputs(d, true, true, 12, false, true);
        const Result unsymmetric = run<double>(asymmetric, true);
        EXPECT_EQ(unsymmetric.flags.symmetric, 0) << where;
        EXPECT_EQ(unsymmetric.flags.step_ok, 0) << where;
        for (double v : unsymmetric.step) EXPECT_TRUE(std::isnan(v)) << where << ": a refused step was written";
        expect_fused_as_two<double>(asymmetric, where + " asymmetric");
    }
}

}  // namespace

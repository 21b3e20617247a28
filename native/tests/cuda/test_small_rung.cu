// The small Cholesky rung (objective_device.cuh's Gauss-Jordan inverse in
// one block, d <= kSmallSystem) as the pipeline launches it
// (launch_small_cholesky_step, kRungThreads) against the same rung by a
// block of kThreads (the block solver's) and of 512, and against the host:
//  * every step value, rcond and verdict has the same bits at every thread
//    count (the count moves which thread forms an entry, never how);
//  * the step solves H step = g and rcond is 1 / (||H||_1 ||H^-1||_1)
//    (against a long-double Gauss-Jordan inverse with partial pivoting);
//  * the rung refuses a matrix with a non-positive pivot (info 1), one the
//    system's flags call asymmetric, and one below rcond = eps d, and writes
//    no step then.
// The first for d = 1 .. 48, float and double; the refusals for d = 1, 17,
// 33, 48 in double. Skip without a device.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "device_buffer.cuh"
#include "ladder_kernels.cuh"
#include "launch.cuh"
#include "objective_device.cuh"

namespace {

using rh::cuda::SystemFlags;
using rh::cuda::testing::device_count;
using rh::cuda::testing::DeviceBuffer;

// The rung by one block of Threads, as the block solver runs it (Threads = kThreads).
template <class T, int Threads>
__global__ void __launch_bounds__(Threads) rung_by_block(std::int64_t d, const T* H, const T* g, T* step,
                                                         SystemFlags* flags) {
    rh::cuda::small_cholesky_step<T, rh::cuda::kSmallSystem, Threads>(d, H, g, step, flags);
}

struct Outcome {
    std::vector<double> step;  // as written (NaN where the rung wrote nothing)
    SystemFlags flags;
};

// A symmetric positive definite H = A A' / d + shift I (column-major) and g.
struct System {
    std::vector<double> H, g;
    std::int64_t d;
};

System random_system(std::int64_t d, unsigned seed, double shift) {
    std::mt19937_64 random(seed);
    std::normal_distribution<double> normal;
    std::vector<double> A(static_cast<std::size_t>(d * d));
    for (double& a : A) a = normal(random);
    System s{std::vector<double>(static_cast<std::size_t>(d * d)), std::vector<double>(static_cast<std::size_t>(d)), d};
    for (std::int64_t i = 0; i < d; ++i)
        for (std::int64_t j = 0; j < d; ++j) {
            double sum = 0.0;
            for (std::int64_t k = 0; k < d; ++k) sum += A[i + k * d] * A[j + k * d];
            s.H[i + j * d] = sum / static_cast<double>(d) + (i == j ? shift : 0.0);
        }
    for (double& v : s.g) v = normal(random);
    return s;
}

// ||H||_1 of the system in T, as assemble_system_matrix writes it for the rung.
template <class T>
double norm1(const std::vector<T>& H, std::int64_t d) {
    double largest = 0.0;
    for (std::int64_t j = 0; j < d; ++j) {
        double column = 0.0;
        for (std::int64_t i = 0; i < d; ++i) column += std::fabs(static_cast<double>(H[i + j * d]));
        largest = column > largest ? column : largest;
    }
    return largest;
}

// Runs the rung by `launch` over the system in T (symmetric: the flags' word).
template <class T, class Launch>
Outcome run(const System& s, bool symmetric, Launch launch) {
    const std::int64_t d = s.d;
    std::vector<T> H(s.H.begin(), s.H.end()), g(s.g.begin(), s.g.end());
    DeviceBuffer<T> dH(H.size()), dg(g.size()), dstep(g.size());
    DeviceBuffer<SystemFlags> dflags(1);
    dH.upload(H);
    dg.upload(g);
    dstep.upload(std::vector<T>(g.size(), std::numeric_limits<T>::quiet_NaN()));
    SystemFlags flags;
    flags.norm1 = norm1(H, d);
    flags.symmetric = symmetric ? 1 : 0;
    dflags.upload({flags});
    launch(d, dH.data, dg.data, dstep.data, dflags.data);
    EXPECT_EQ(cudaGetLastError(), cudaSuccess);
    EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    Outcome out;
    for (T v : dstep.download(g.size())) out.step.push_back(static_cast<double>(v));
    out.flags = dflags.download(1)[0];
    return out;
}

template <class T>
Outcome pipeline_rung(const System& s, bool symmetric = true) {
    return run<T>(s, symmetric, [](std::int64_t d, const T* H, const T* g, T* step, SystemFlags* flags) {
        rh::cuda::launch_small_cholesky_step<T>(nullptr, d, H, g, step, flags);
    });
}

template <class T, int Threads>
Outcome block_rung(const System& s, bool symmetric = true) {
    return run<T>(s, symmetric, [](std::int64_t d, const T* H, const T* g, T* step, SystemFlags* flags) {
        rung_by_block<T, Threads><<<1, Threads>>>(d, H, g, step, flags);
    });
}

bool same_bits(double a, double b) { return std::memcmp(&a, &b, sizeof a) == 0; }

void expect_same(const Outcome& a, const Outcome& b, const std::string& where) {
    ASSERT_EQ(a.step.size(), b.step.size()) << where;
    for (std::size_t i = 0; i < a.step.size(); ++i)
        EXPECT_TRUE(same_bits(a.step[i], b.step[i])) << where << " step[" << i << "] " << a.step[i] << " vs "
                                                     << b.step[i];
    EXPECT_TRUE(same_bits(a.flags.rcond, b.flags.rcond)) << where << " rcond";
    EXPECT_EQ(a.flags.step_ok, b.flags.step_ok) << where;
    EXPECT_EQ(a.flags.info, b.flags.info) << where;
}

// The long-double inverse of H in T's values (Gauss-Jordan with partial
// pivoting: the reference, not the rung's arithmetic).
template <class T>
std::vector<long double> host_inverse(const System& s) {
    const std::int64_t d = s.d;
    std::vector<long double> a(static_cast<std::size_t>(d * 2 * d), 0.0L);  // row-major [H | I]
    for (std::int64_t i = 0; i < d; ++i) {
        for (std::int64_t j = 0; j < d; ++j) a[i * 2 * d + j] = static_cast<T>(s.H[i + j * d]);
        a[i * 2 * d + d + i] = 1.0L;
    }
    for (std::int64_t k = 0; k < d; ++k) {
        std::int64_t best = k;
        for (std::int64_t i = k + 1; i < d; ++i)
            if (std::fabs(a[i * 2 * d + k]) > std::fabs(a[best * 2 * d + k])) best = i;
        for (std::int64_t j = 0; j < 2 * d; ++j) std::swap(a[k * 2 * d + j], a[best * 2 * d + j]);
        const long double pivot = a[k * 2 * d + k];
        for (std::int64_t j = 0; j < 2 * d; ++j) a[k * 2 * d + j] /= pivot;
        for (std::int64_t i = 0; i < d; ++i) {
            if (i == k) continue;
            const long double factor = a[i * 2 * d + k];
            for (std::int64_t j = 0; j < 2 * d; ++j) a[i * 2 * d + j] -= factor * a[k * 2 * d + j];
        }
    }
    std::vector<long double> inverse(static_cast<std::size_t>(d * d));  // column-major
    for (std::int64_t i = 0; i < d; ++i)
        for (std::int64_t j = 0; j < d; ++j) inverse[i + j * d] = a[i * 2 * d + d + j];
    return inverse;
}

template <class T>
void expect_solves(const System& s, const Outcome& out, const std::string& where) {
    const std::int64_t d = s.d;
    const std::vector<long double> inverse = host_inverse<T>(s);
    long double inverse_norm = 0.0L;
    for (std::int64_t j = 0; j < d; ++j) {
        long double column = 0.0L;
        for (std::int64_t i = 0; i < d; ++i) column += std::fabs(inverse[i + j * d]);
        inverse_norm = column > inverse_norm ? column : inverse_norm;
    }
    std::vector<T> H(s.H.begin(), s.H.end());
    const long double rcond = 1.0L / (static_cast<long double>(norm1(H, d)) * inverse_norm);
    EXPECT_NEAR(out.flags.rcond, static_cast<double>(rcond), 1e-10 * static_cast<double>(rcond)) << where;
    ASSERT_EQ(out.flags.step_ok, 1) << where;
    EXPECT_EQ(out.flags.info, 0) << where;
    const double tolerance = sizeof(T) == 8 ? 1e-11 : 1e-5;
    for (std::int64_t i = 0; i < d; ++i) {
        long double x = 0.0L, scale = 0.0L;
        for (std::int64_t j = 0; j < d; ++j) {
            x += inverse[i + j * d] * static_cast<T>(s.g[j]);
            scale += std::fabs(inverse[i + j * d] * static_cast<T>(s.g[j]));
        }
        EXPECT_NEAR(out.step[i], static_cast<double>(x), tolerance * static_cast<double>(scale)) << where << " i=" << i;
    }
}

template <class T>
void every_size_every_thread_count() {
    for (std::int64_t d = 1; d <= rh::cuda::kSmallSystem; ++d) {
        const System s = random_system(d, static_cast<unsigned>(d), 0.5);
        const std::string where = std::string(sizeof(T) == 8 ? "double" : "float") + " d=" + std::to_string(d);
        const Outcome pipeline = pipeline_rung<T>(s);
        expect_same(pipeline, block_rung<T, rh::cuda::kThreads>(s), where + " (kThreads)");
        expect_same(pipeline, block_rung<T, 512>(s), where + " (512)");
        expect_solves<T>(s, pipeline, where);
    }
}

TEST(CudaSmallRung, EveryStepHasTheSameBitsAtEveryThreadCountAndSolvesTheSystem) {
    if (device_count() == 0) GTEST_SKIP() << "no CUDA device";
    every_size_every_thread_count<double>();
    every_size_every_thread_count<float>();
}

TEST(CudaSmallRung, RefusesANonPositivePivotAnAsymmetricSystemAndOneBelowTheRcondRule) {
    if (device_count() == 0) GTEST_SKIP() << "no CUDA device";
    for (std::int64_t d : {1, 17, 33, 48}) {
        const std::string where = "d=" + std::to_string(d);
        System indefinite = random_system(d, 7, 0.5);
        indefinite.H[(d - 1) + (d - 1) * d] = -1e3;  // the last pivot negative
        const Outcome refused = pipeline_rung<double>(indefinite);
        EXPECT_EQ(refused.flags.info, 1) << where;
        EXPECT_EQ(refused.flags.step_ok, 0) << where;
        expect_same(refused, block_rung<double, rh::cuda::kThreads>(indefinite), where + " indefinite");

        const System regular = random_system(d, 8, 0.5);
        const Outcome asymmetric = pipeline_rung<double>(regular, false);
        EXPECT_EQ(asymmetric.flags.info, 0) << where;
        EXPECT_EQ(asymmetric.flags.step_ok, 0) << where;

        for (double v : asymmetric.step) EXPECT_TRUE(std::isnan(v)) << where << ": a refused step was written";

        if (d >= 6) {  // all ones plus 1e-14 I: positive pivots (the first about 1, then 1e-14 to 2e-14), rcond about
                       // 1e-14 / (2 (d - 1)), below eps d from d = 6 on
            System singular{std::vector<double>(static_cast<std::size_t>(d * d)), std::vector<double>(d, 1.0), d};
            for (std::int64_t i = 0; i < d; ++i)
                for (std::int64_t j = 0; j < d; ++j) singular.H[i + j * d] = 1.0 + (i == j ? 1e-14 : 0.0);
            const Outcome below = pipeline_rung<double>(singular);
            EXPECT_EQ(below.flags.step_ok, 0) << where << " rcond " << below.flags.rcond;
            EXPECT_EQ(below.flags.info, 0) << where << ": refused by rcond, not by a pivot";
            EXPECT_LE(below.flags.rcond, 2.220446049250313e-16 * static_cast<double>(d)) << where;
            for (double v : below.step) EXPECT_TRUE(std::isnan(v)) << where << ": a refused step was written";
            expect_same(below, block_rung<double, rh::cuda::kThreads>(singular), where + " singular");
        }
        for (double v : refused.step) EXPECT_TRUE(std::isnan(v)) << where << ": a refused step was written";
    }
}

}  // namespace

// The narrow Gram (gram_kernels.cu, on the tensor cores) against a host sum
// of the same products: every column-block count it dispatches (d = 1 .. 64),
// with and without the intercept column, row counts that are not a multiple
// of the MMA's 4 rows, float and double. It writes the upper triangle only,
// and gives the same bits on a second launch. Skips without a device.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include "gram_kernels.cuh"

namespace {

int device_count() {
    int count = 0;
    return cudaGetDeviceCount(&count) == cudaSuccess ? count : 0;
}

template <class T>
struct DeviceBuffer {
    T* data = nullptr;
    explicit DeviceBuffer(std::size_t count) { EXPECT_EQ(cudaMalloc(&data, sizeof(T) * (count ? count : 1)), cudaSuccess); }
    ~DeviceBuffer() { cudaFree(data); }
    void upload(const std::vector<T>& host) {
        ASSERT_EQ(cudaMemcpy(data, host.data(), sizeof(T) * host.size(), cudaMemcpyHostToDevice), cudaSuccess);
    }
    std::vector<T> download(std::size_t count) const {
        std::vector<T> host(count);
        EXPECT_EQ(cudaMemcpy(host.data(), data, sizeof(T) * count, cudaMemcpyDeviceToHost), cudaSuccess);
        return host;
    }
};

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

}  // namespace

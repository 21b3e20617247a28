// The fast path's Gram cache (cpu/fast/gram_cache.hpp): incremental updates
// equal a full recompute within rounding, and many changes recompute.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <type_traits>
#include <vector>

#include "fast_fixture.hpp"

using namespace rh;
using rh::test::FastFixture;

namespace {

template <class T>
double max_relative_upper_error(const std::vector<T>& G, const std::vector<double>& exact, std::int64_t d) {
    double scale = 0, error = 0;
    for (std::int64_t j = 0; j < d; ++j)
        for (std::int64_t k = j; k < d; ++k) {
            scale = std::max(scale, std::fabs(exact[j * d + k]));
            error = std::max(error, std::fabs(double(G[j * d + k]) - exact[j * d + k]));
        }
    return error / scale;
}

}  // namespace

template <class T>
class GramCacheTest : public ::testing::Test {};
using Dtypes = ::testing::Types<float, double>;
TYPED_TEST_SUITE(GramCacheTest, Dtypes);

TYPED_TEST(GramCacheTest, IncrementalUpdatesEqualAFullRecomputeWithinRounding) {
    using T = TypeParam;
    const double tolerance = std::is_same_v<T, double> ? 1e-13 : 2e-5;
    for (int threads : {1, 2, 3}) {
        FastFixture<T> f(5000, 12, threads);
        cpu::GramCounters counters;
        cpu::fast::GramCache<T> gram(f.problem, f.context);
        std::mt19937_64 rng(9);
        std::uniform_real_distribution<double> uniform(0.0, 1.0);
        std::vector<T> c(f.n);
        for (auto& v : c) v = uniform(rng) < 0.2 ? T(0) : T(1);  // kappa is 0 or 1 for most rows
        // First refresh: full.
        std::copy(c.begin(), c.end(), f.ws.curvature.begin());
        gram.refresh({0.0, f.n, f.n}, counters);
        EXPECT_EQ(counters.full_updates, 1);
        // Ten rounds changing a few percent of the rows, up and down.
        for (int round = 0; round < 10; ++round) {
            std::int64_t changed = 0, weighted = 0;
            for (std::int64_t i = 0; i < f.n; ++i) {
                if (uniform(rng) < 0.03) c[i] = uniform(rng) < 0.5 ? T(0) : T(uniform(rng));
                changed += c[i] != f.ws.gram_curvature[i];
                weighted += c[i] > T(0);
            }
            std::copy(c.begin(), c.end(), f.ws.curvature.begin());
            gram.refresh({0.0, changed, weighted}, counters);
            EXPECT_LT(max_relative_upper_error(f.ws.gram, f.exact_gram(c), f.d), tolerance) << "round " << round;
        }
        EXPECT_EQ(counters.full_updates, 1) << "small changes must stay incremental";
        EXPECT_EQ(counters.incremental_updates, 10);
        // Many changes: a full recompute again.
        for (std::int64_t i = 0; i < f.n; i += 2) c[i] = T(0.5);
        std::copy(c.begin(), c.end(), f.ws.curvature.begin());
        gram.refresh({0.0, f.n / 2, f.n}, counters);
        EXPECT_EQ(counters.full_updates, 2);
        EXPECT_LT(max_relative_upper_error(f.ws.gram, f.exact_gram(c), f.d), tolerance);
    }
}

// The majorizer's Gram (amendment 0002) goes to its own buffer: the cached
// Gram and the weights it represents are left exactly as they were, and the
// next incremental update is still right. Narrow (12) and wide (80) rows.
TYPED_TEST(GramCacheTest, AGramIntoAnotherBufferLeavesTheCacheIntact) {
    using T = TypeParam;
    const double tolerance = std::is_same_v<T, double> ? 1e-13 : 2e-5;
    for (std::int64_t p : {12, 80})
        for (int threads : {1, 3}) {
            FastFixture<T> f(3000, p, threads);
            cpu::GramCounters counters;
            cpu::fast::GramCache<T> gram(f.problem, f.context);
            std::vector<T> c(f.n), weights(f.n);
            for (std::int64_t i = 0; i < f.n; ++i) {
                c[i] = i % 5 == 0 ? T(0) : T(1);
                weights[i] = T(0.5) + T(i % 3);
            }
            std::copy(c.begin(), c.end(), f.ws.curvature.begin());
            gram.refresh({0.0, f.n, f.n}, counters);
            const std::vector<T> cached = f.ws.gram, cached_weights(f.ws.gram_curvature.begin(),
                                                                    f.ws.gram_curvature.begin() + f.n);
            std::vector<T> other(f.d * f.d, T(-7));
            gram.weighted_gram_into(weights.data(), other.data());
            EXPECT_LT(max_relative_upper_error(other, f.exact_gram(weights), f.d), tolerance) << "p " << p;
            EXPECT_EQ(f.ws.gram, cached);
            EXPECT_TRUE(std::equal(cached_weights.begin(), cached_weights.end(), f.ws.gram_curvature.begin()));
            // The cache keeps working incrementally from its own weights.
            c[1] = T(0);
            c[2] = T(0.5);
            std::copy(c.begin(), c.end(), f.ws.curvature.begin());
            gram.refresh({0.0, 2, f.n}, counters);
            EXPECT_EQ(counters.incremental_updates, 1);
            EXPECT_LT(max_relative_upper_error(f.ws.gram, f.exact_gram(c), f.d), tolerance) << "p " << p;
        }
}

// The narrow kernels' buffers exist only where those kernels run: the Gram
// scratch grows as d^2 per thread and the panels as a copy of the batch.
TEST(FastBuffers, NarrowBuffersOnlyForNarrowDesigns) {
    cpu::BufferGrowth growth;
    cpu::fast::FastBuffers<double> wide;
    wide.reserve(growth, 64, 1001, 2);
    EXPECT_EQ(wide.gram_scratch.size(), 0u);
    EXPECT_EQ(wide.narrow_panels.size(), 0u);
    cpu::fast::FastBuffers<double> narrow;
    narrow.reserve(growth, 64, 17, 2);
    EXPECT_GE(static_cast<std::int64_t>(narrow.gram_scratch.size()), 2 * cpu::fast::narrow_gram_scratch_size(17));
}

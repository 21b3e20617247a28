// update_batches' background host copies (host_slice_copier.hpp): every job
// copies exactly its spans, whatever the threads and the spans' sizes
// (empty spans, fewer bytes than threads, spans across the threads' shares),
// job after job, and the copier stops cleanly with or without a job.
#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <algorithm>
#include <numeric>
#include <vector>

#include "byte_pattern.hpp"
#include "host_slice_copier.hpp"

namespace {

using rh::cuda::CopySpan;
using rh::cuda::HostSliceCopier;
using rh::test::pattern;


}  // namespace

TEST(HostSliceCopier, EveryJobCopiesExactlyItsSpans) {
    for (int threads : {1, 2, 3, 4, 7}) {
        HostSliceCopier copier(threads);
        ASSERT_EQ(copier.threads(), threads);
        for (const std::vector<std::size_t>& sizes : std::vector<std::vector<std::size_t>>{
                 {0}, {1}, {5, 0, 3}, {1000, 1, 999, 0, 4096}, {3 * 1024 * 1024 + 5, 17, 64 * 1024}}) {
            std::vector<std::vector<unsigned char>> sources, destinations;
            std::vector<CopySpan> spans;
            for (std::size_t k = 0; k < sizes.size(); ++k) {
                sources.push_back(pattern(sizes[k], static_cast<unsigned>(k + threads)));
                destinations.emplace_back(sizes[k] + 2, 0xAB);  // a guard byte either side
            }
            for (std::size_t k = 0; k < sizes.size(); ++k)
                spans.push_back({destinations[k].data() + 1, sources[k].data(), sizes[k]});
            copier.start(spans);
            copier.wait();
            for (std::size_t k = 0; k < sizes.size(); ++k) {
                const auto& d = destinations[k];
                EXPECT_EQ(d.front(), 0xAB) << "written before span " << k;
                EXPECT_EQ(d.back(), 0xAB) << "written past span " << k;
                EXPECT_TRUE(std::equal(sources[k].begin(), sources[k].end(), d.begin() + 1)) << "span " << k;
            }
        }
    }
}

TEST(HostSliceCopier, StartWaitsForTheJobBeforeIt) {
    HostSliceCopier copier(3);
    const auto a = pattern(1 << 20, 1), b = pattern(1 << 20, 2);
    std::vector<unsigned char> first(a.size()), second(b.size());
    copier.start({{first.data(), a.data(), a.size()}});
    copier.start({{second.data(), b.data(), b.size()}});  // the first job is complete when this returns
    EXPECT_EQ(first, a);
    copier.wait();
    EXPECT_EQ(second, b);
}

TEST(HostSliceCopier, StopsWithAJobInFlightAndWithoutAny) {
    const auto a = pattern(1 << 22, 3);
    std::vector<unsigned char> out(a.size());
    {
        HostSliceCopier copier(2);
        copier.start({{out.data(), a.data(), a.size()}});
    }  // the destructor finishes the job, then joins
    EXPECT_EQ(out, a);
    { HostSliceCopier idle(4); }
    SUCCEED();
}

// update_batches' staging ring (chunk_stager.hpp, reuse_pool.hpp) without a
// device: a simulated copy engine on a thread of its own reads each handed
// slot some time later, as the real one does, so a slot refilled before its
// transfer read it would put the wrong bytes in the "device" buffer. Every
// slice arrives exactly, whatever its size against the ring's chunks; a
// failing transfer is rethrown by wait() and the stager stays usable (a
// failing thread setup is its constructor's failure); the
// pool lends one resource again and makes one more only for a user at the
// same time.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <cstring>
#include <deque>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <thread>
#include <vector>

#include "byte_pattern.hpp"
#include "chunk_stager.hpp"
#include "reuse_pool.hpp"

namespace {

using rh::cuda::ChunkedSliceStager;
using rh::cuda::CopySpan;
using rh::cuda::ReusePool;
using rh::cuda::spans_within;
using rh::cuda::StagingJob;
using rh::test::pattern;

// A copy engine: transfers queue in order and run on its thread, each a
// little later; wait_slot(s) returns once slot s's last queued transfer ran.
class SimulatedCopyEngine {
public:
    explicit SimulatedCopyEngine(std::size_t slots) : queued_(slots, 0), done_(slots, 0) {
        thread_ = std::thread([this] { serve(); });
    }
    ~SimulatedCopyEngine() {
        {
            std::lock_guard<std::mutex> lock(mutex_);
            stopping_ = true;
        }
        wake_.notify_all();
        thread_.join();
    }
    void transfer(int slot, unsigned char* destination, const unsigned char* source, std::size_t bytes) {
        std::lock_guard<std::mutex> lock(mutex_);
        const std::size_t ticket = ++queued_[static_cast<std::size_t>(slot)];
        work_.push_back({slot, ticket, destination, source, bytes});
        wake_.notify_all();
    }
    void wait_slot(int slot) {
        std::unique_lock<std::mutex> lock(mutex_);
        wake_.wait(lock, [&] { return done_[static_cast<std::size_t>(slot)] == queued_[static_cast<std::size_t>(slot)]; });
    }
    void drain() {
        std::unique_lock<std::mutex> lock(mutex_);
        wake_.wait(lock, [&] { return work_.empty() && !busy_; });
    }

private:
    struct Transfer {
        int slot;
        std::size_t ticket;
        unsigned char* destination;
        const unsigned char* source;
        std::size_t bytes;
    };
    void serve() {
        for (;;) {
            Transfer next{};
            {
                std::unique_lock<std::mutex> lock(mutex_);
                wake_.wait(lock, [&] { return stopping_ || !work_.empty(); });
                if (work_.empty()) return;
                next = work_.front();
                work_.pop_front();
                busy_ = true;
            }
            std::this_thread::yield();  // later than it was queued (any later: no timing is relied on)
            std::memcpy(next.destination, next.source, next.bytes);
            {
                std::lock_guard<std::mutex> lock(mutex_);
                done_[static_cast<std::size_t>(next.slot)] = next.ticket;
                busy_ = false;
            }
            wake_.notify_all();
        }
    }
    std::mutex mutex_;
    std::condition_variable wake_;
    std::deque<Transfer> work_;
    std::vector<std::size_t> queued_, done_;
    bool busy_ = false, stopping_ = false;
    std::thread thread_;
};

struct Ring {
    Ring(std::size_t slots, std::size_t chunk) : memory(slots * chunk) {
        for (std::size_t s = 0; s < slots; ++s) pointers.push_back(memory.data() + s * chunk);
    }
    std::vector<unsigned char> memory;
    std::vector<unsigned char*> pointers;
};

// A job's transfer: slot s's chunk to destination + offset through the simulated copy engine.
auto to_device(SimulatedCopyEngine& engine, const Ring& ring, unsigned char* destination) {
    return [&engine, &ring, destination](int s, std::size_t offset, std::size_t bytes) {
        engine.transfer(s, destination + offset, ring.pointers[static_cast<std::size_t>(s)], bytes);
    };
}

}  // namespace

TEST(SpansWithin, MapsAnyRangeOfTheConcatenationOntoTheDestination) {
    const auto a = pattern(10, 1), b = pattern(0, 2), c = pattern(7, 3), d = pattern(25, 4);
    std::vector<unsigned char> all;
    for (const auto* part : {&a, &b, &c, &d}) all.insert(all.end(), part->begin(), part->end());
    const std::vector<CopySpan> sources{{nullptr, a.data(), a.size()}, {nullptr, b.data(), 0},
                                        {nullptr, c.data(), c.size()}, {nullptr, d.data(), d.size()}};
    for (std::size_t first = 0; first <= all.size(); ++first) {
        for (std::size_t count = 0; first + count <= all.size(); ++count) {
            std::vector<unsigned char> out(count + 1, 0xEE);
            std::size_t total = 0;
            for (const CopySpan& span : spans_within(sources, first, count, out.data())) {
                EXPECT_GT(span.bytes, 0u);
                std::memcpy(span.destination, span.source, span.bytes);
                total += span.bytes;
            }
            ASSERT_EQ(total, count) << first << "+" << count;
            EXPECT_TRUE(std::equal(out.begin(), out.begin() + static_cast<std::ptrdiff_t>(count),
                                   all.begin() + static_cast<std::ptrdiff_t>(first)))
                << first << "+" << count;
            EXPECT_EQ(out.back(), 0xEE) << "written past " << first << "+" << count;
        }
    }
}

TEST(ChunkedSliceStager, EverySliceArrivesExactlyThroughARingOfFewerChunks) {
    for (std::size_t chunk : {std::size_t{1}, std::size_t{64}, std::size_t{4096}}) {
        for (std::size_t slots : {std::size_t{1}, std::size_t{2}, std::size_t{4}}) {
            Ring ring(slots, chunk);
            SimulatedCopyEngine engine(slots);
            ChunkedSliceStager stager(ring.pointers, chunk, 2, [&](int s) { engine.wait_slot(s); });
            // slices of one to many chunks, ending inside or at a chunk's end, with an empty span
            for (std::size_t rows : {std::size_t{1}, std::size_t{63}, std::size_t{64}, std::size_t{1000}}) {
                const auto X = pattern(rows * 5, static_cast<unsigned>(rows)), y = pattern(rows, 7);
                std::vector<unsigned char> device(X.size() + y.size() + 1, 0xEE);
                std::atomic<int> begun{0}, ended{0};
                StagingJob job;
                job.sources = {{nullptr, X.data(), X.size()}, {nullptr, y.data(), 0}, {nullptr, y.data(), y.size()}};
                job.begin = [&] { ++begun; };
                job.transfer = [&, send = to_device(engine, ring, device.data())](int s, std::size_t offset,
                                                                                  std::size_t bytes) {
                    ASSERT_LE(bytes, chunk);
                    send(s, offset, bytes);
                };
                job.end = [&] { ++ended; };
                stager.start(std::move(job));
                stager.wait();
                engine.drain();
                EXPECT_EQ(begun.load(), 1);
                EXPECT_EQ(ended.load(), 1);
                EXPECT_TRUE(std::equal(X.begin(), X.end(), device.begin())) << chunk << " " << slots << " " << rows;
                EXPECT_TRUE(std::equal(y.begin(), y.end(), device.begin() + static_cast<std::ptrdiff_t>(X.size())))
                    << chunk << " " << slots << " " << rows;
                EXPECT_EQ(device.back(), 0xEE) << "written past the slice";
            }
        }
    }
}

TEST(ChunkedSliceStager, StartWaitsForTheJobBeforeItAndJobsRunInOrder) {
    Ring ring(2, 256);
    SimulatedCopyEngine engine(2);
    ChunkedSliceStager stager(ring.pointers, 256, 3, [&](int s) { engine.wait_slot(s); });
    std::vector<std::vector<unsigned char>> sources, devices;
    for (unsigned k = 0; k < 6; ++k) {
        sources.push_back(pattern(1000 + 300 * k, k));
        devices.emplace_back(sources.back().size(), 0);
    }
    std::vector<int> ended;
    for (std::size_t k = 0; k < sources.size(); ++k) {
        StagingJob job;
        job.sources = {{nullptr, sources[k].data(), sources[k].size()}};
        job.transfer = to_device(engine, ring, devices[k].data());
        job.end = [&ended, k] { ended.push_back(static_cast<int>(k)); };  // one job at a time: no lock needed
        stager.start(std::move(job));
    }
    stager.wait();
    engine.drain();
    EXPECT_EQ(ended, (std::vector<int>{0, 1, 2, 3, 4, 5}));
    for (std::size_t k = 0; k < sources.size(); ++k) EXPECT_EQ(devices[k], sources[k]) << "job " << k;
}

TEST(ChunkedSliceStager, AFailingTransferIsRethrownOnceAndTheStagerGoesOn) {
    Ring ring(2, 16);
    SimulatedCopyEngine engine(2);
    ChunkedSliceStager stager(ring.pointers, 16, 1, [&](int s) { engine.wait_slot(s); });
    const auto source = pattern(100, 9);
    int transfers = 0;
    bool ended = false;
    StagingJob failing;
    failing.sources = {{nullptr, source.data(), source.size()}};
    failing.transfer = [&](int, std::size_t, std::size_t) {
        if (++transfers == 3) throw std::runtime_error("the copy engine refused");
    };
    failing.end = [&] { ended = true; };
    stager.start(std::move(failing));
    EXPECT_THROW(
        {
            try {
                stager.wait();
            } catch (const std::runtime_error& error) {
                EXPECT_STREQ(error.what(), "the copy engine refused");
                throw;
            }
        },
        std::runtime_error);
    EXPECT_EQ(transfers, 3);  // no chunk after the failing one, and no end()
    EXPECT_FALSE(ended);
    EXPECT_NO_THROW(stager.wait());  // rethrown once
    std::vector<unsigned char> device(source.size(), 0);
    StagingJob good;
    good.sources = {{nullptr, source.data(), source.size()}};
    good.transfer = to_device(engine, ring, device.data());
    stager.start(std::move(good));
    stager.wait();
    engine.drain();
    EXPECT_EQ(device, source);
}

TEST(ChunkedSliceStager, ASlotWhoseTransferQueuedItsReadThenFailedIsWaitedForBeforeItIsRefilled) {
    // (a cudaMemcpyAsync queued, then its event record failed)
    Ring ring(1, 16);
    SimulatedCopyEngine engine(1);
    std::vector<int> waited;
    ChunkedSliceStager stager(ring.pointers, 16, 1, [&](int s) {
        waited.push_back(s);
        engine.wait_slot(s);
    });
    const auto first = pattern(16, 1), second = pattern(16, 2);
    std::vector<unsigned char> device(16, 0);
    StagingJob failing;
    failing.sources = {{nullptr, first.data(), first.size()}};
    failing.transfer = [send = to_device(engine, ring, device.data())](int s, std::size_t offset, std::size_t bytes) {
        send(s, offset, bytes);
        throw std::runtime_error("the event could not be recorded");
    };
    stager.start(std::move(failing));
    EXPECT_THROW(stager.wait(), std::runtime_error);
    std::vector<unsigned char> again(16, 0);
    StagingJob next;
    next.sources = {{nullptr, second.data(), second.size()}};
    next.transfer = to_device(engine, ring, again.data());
    stager.start(std::move(next));
    stager.wait();
    engine.drain();
    EXPECT_EQ(waited, (std::vector<int>{0}));  // the slot the failed transfer had queued a read of
    EXPECT_EQ(device, first);
    EXPECT_EQ(again, second);
}

TEST(ChunkedSliceStager, AFailingThreadSetupIsTheConstructorsFailure) {
    Ring ring(1, 8);
    EXPECT_THROW(ChunkedSliceStager(ring.pointers, 8, 1, [](int) {}, [] { throw std::runtime_error("no device"); }),
                 std::runtime_error);
}

TEST(ChunkedSliceStager, AnAbandonedJobStopsBeforeItsNextChunkWithoutItsEnd) {
    // An update failed: its error should not wait for the rest of a large slice to be copied.
    Ring ring(3, 1024);
    SimulatedCopyEngine engine(3);
    const auto source = pattern(1 << 16, 5);  // 64 chunks
    std::vector<unsigned char> device(source.size(), 0);
    int transfers = 0;
    bool ended = false;
    ChunkedSliceStager stager(ring.pointers, 1024, 2, [&](int s) { engine.wait_slot(s); });
    StagingJob job;
    job.sources = {{nullptr, source.data(), source.size()}};
    job.transfer = [&, send = to_device(engine, ring, device.data())](int s, std::size_t offset, std::size_t bytes) {
        send(s, offset, bytes);
        if (++transfers == 2) stager.abandon();  // the owner goes while the job is in flight
    };
    job.end = [&] { ended = true; };
    stager.start(std::move(job));
    EXPECT_NO_THROW(stager.wait());  // abandoned, not failed
    engine.drain();
    EXPECT_EQ(transfers, 2);
    EXPECT_FALSE(ended);
    EXPECT_TRUE(std::equal(source.begin(), source.begin() + 2048, device.begin()));
    EXPECT_TRUE(std::all_of(device.begin() + 2048, device.end(), [](unsigned char v) { return v == 0; }));
}

TEST(ChunkedSliceStager, StopsWithAJobInFlightAndWithoutAny) {
    const auto source = pattern(1 << 16, 5);
    std::vector<unsigned char> device(source.size(), 0);
    {
        Ring ring(3, 1024);
        SimulatedCopyEngine engine(3);
        {
            ChunkedSliceStager stager(ring.pointers, 1024, 2, [&](int s) { engine.wait_slot(s); });
            StagingJob job;
            job.sources = {{nullptr, source.data(), source.size()}};
            job.transfer = to_device(engine, ring, device.data());
            stager.start(std::move(job));
        }  // the destructor abandons the job at a chunk's end (or finds it done), then joins
        engine.drain();
    }
    // what arrived is the source's first whole chunks, and nothing after them
    std::size_t arrived = 0;
    while (arrived < source.size() &&
           std::equal(source.begin() + static_cast<std::ptrdiff_t>(arrived),
                      source.begin() + static_cast<std::ptrdiff_t>(arrived + 1024),
                      device.begin() + static_cast<std::ptrdiff_t>(arrived)))
        arrived += 1024;
    EXPECT_TRUE(std::all_of(device.begin() + static_cast<std::ptrdiff_t>(arrived), device.end(),
                            [](unsigned char v) { return v == 0; }));
    {
        Ring ring(1, 8);
        ChunkedSliceStager idle(ring.pointers, 8, 4, [](int) {});
    }
    SUCCEED();
}

TEST(ChunkedSliceStager, AnEmptyRingOrAZeroChunkIsRefused) {
    Ring ring(1, 8);
    EXPECT_THROW(ChunkedSliceStager({}, 8, 1, [](int) {}), std::invalid_argument);
    EXPECT_THROW(ChunkedSliceStager(ring.pointers, 0, 1, [](int) {}), std::invalid_argument);
}

TEST(ReusePool, LendsOneResourceAgainAndMakesAnotherOnlyForAUserAtTheSameTime) {
    ReusePool<int> pool;
    int made = 0;
    auto make = [&] { return std::make_unique<int>(++made); };
    int* first = nullptr;
    {
        auto lease = pool.acquire(make);
        first = &*lease;
        EXPECT_EQ(*lease, 1);
        EXPECT_EQ(pool.idle(), 0u);
    }
    EXPECT_EQ(pool.idle(), 1u);
    {
        auto again = pool.acquire(make);
        EXPECT_EQ(&*again, first);  // the same resource, not a new one
        auto other = pool.acquire(make);  // a user at the same time: one more
        EXPECT_EQ(*other, 2);
        EXPECT_NE(&*other, first);
    }
    EXPECT_EQ(made, 2);
    EXPECT_EQ(pool.idle(), 2u);
    auto moved = pool.acquire(make);
    auto target = std::move(moved);  // one lease, moved: given back once
    EXPECT_FALSE(moved);
    EXPECT_TRUE(target);
}

TEST(ReusePool, AFailingMakeLeavesThePoolAsItWas) {
    ReusePool<int> pool;
    EXPECT_THROW(pool.acquire([]() -> std::unique_ptr<int> { throw std::runtime_error("no pinned memory"); }),
                 std::runtime_error);
    EXPECT_EQ(pool.idle(), 0u);
    { auto lease = pool.acquire([] { return std::make_unique<int>(7); }); }
    EXPECT_EQ(pool.idle(), 1u);
}

namespace {
// A resource that counts its destructions.
struct Counted {
    explicit Counted(int* destroyed) : destroyed(destroyed) {}
    ~Counted() { ++*destroyed; }
    int* destroyed;
};
}  // namespace

TEST(ReusePool, KeepsAtMostItsIdleLimitAndDestroysTheRest) {
    ReusePool<Counted> pool(2);
    int destroyed = 0;
    auto make = [&] { return std::make_unique<Counted>(&destroyed); };
    {
        auto a = pool.acquire(make), b = pool.acquire(make), c = pool.acquire(make);  // three at once
    }
    EXPECT_EQ(pool.idle(), 2u);
    EXPECT_EQ(destroyed, 1);  // the third given back: over the limit
    {
        auto again = pool.acquire(make);
        EXPECT_EQ(pool.idle(), 1u);
    }
    EXPECT_EQ(pool.idle(), 2u);
    EXPECT_EQ(destroyed, 1);
}

TEST(ReusePool, ADiscardedResourceIsDestroyedNotLentAgain) {
    ReusePool<Counted> pool;
    int destroyed = 0, made = 0;
    auto make = [&] {
        ++made;
        return std::make_unique<Counted>(&destroyed);
    };
    {
        auto lease = pool.acquire(make);
        lease.discard();  // broken: not given back
        EXPECT_FALSE(lease);
        EXPECT_EQ(destroyed, 1);
    }
    EXPECT_EQ(pool.idle(), 0u);
    { auto fresh = pool.acquire(make); }
    EXPECT_EQ(made, 2);
    EXPECT_EQ(pool.idle(), 1u);
}

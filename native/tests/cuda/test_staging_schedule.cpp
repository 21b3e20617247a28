// update_batches' staging order (staging_schedule.hpp) on a simulated
// device: each stream is a thread running its queue in order, a little late
// (copies and kernels sleep first), and events follow CUDA's rules (a wait
// is for the event's latest record when it is issued). Each update's
// "kernels" check, on the engine stream, that its buffer holds its slice:
// when it starts (an update reading before its slice arrived fails) and
// once more after the update returned (a slice copied into a buffer that a
// trailing kernel still reads fails), for an engine that waits for the
// device in each update and one that does not. Passing never depends on
// the timing; the sleeps only make a wrong order show.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstring>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "staging_schedule.hpp"

namespace {

using rh::cuda::CopySpan;
using rh::cuda::stage_slices;
using rh::cuda::StagingResources;

class SimulatedDevice {
public:
    struct EventState {
        std::size_t recorded = 0, completed = 0;
    };
    class StreamState {
    public:
        explicit StreamState(SimulatedDevice& device) : device_(device), thread_([this] { serve(); }) {}
        ~StreamState() {
            {
                std::lock_guard<std::mutex> lock(device_.mutex_);
                stopping_ = true;
            }
            device_.changed_.notify_all();
            thread_.join();
        }
        void enqueue(std::function<void()> op) {
            std::lock_guard<std::mutex> lock(device_.mutex_);
            queue_.push_back(std::move(op));
            device_.changed_.notify_all();
        }
        bool idle() const { return queue_.empty() && !busy_; }  // (under the device's lock)

    private:
        void serve() {
            for (;;) {
                std::function<void()> op;
                {
                    std::unique_lock<std::mutex> lock(device_.mutex_);
                    device_.changed_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
                    if (queue_.empty()) return;
                    op = std::move(queue_.front());
                    queue_.pop_front();
                    busy_ = true;
                }
                op();
                {
                    std::lock_guard<std::mutex> lock(device_.mutex_);
                    busy_ = false;
                }
                device_.changed_.notify_all();
            }
        }
        SimulatedDevice& device_;
        std::deque<std::function<void()>> queue_;
        bool busy_ = false, stopping_ = false;
        std::thread thread_;
    };
    using Stream = StreamState*;
    using Event = EventState*;

    Stream stream() {
        streams_.push_back(std::make_unique<StreamState>(*this));
        return streams_.back().get();
    }
    Event event() {
        events_.push_back(std::make_unique<EventState>());
        return events_.back().get();
    }

    void record(Event event, Stream stream) {
        std::size_t generation;
        {
            std::lock_guard<std::mutex> lock(mutex_);
            generation = ++event->recorded;
        }
        stream->enqueue([this, event, generation] {
            std::lock_guard<std::mutex> lock(mutex_);
            event->completed = std::max(event->completed, generation);
        });
    }
    void wait(Stream stream, Event event) {
        std::size_t generation;
        {
            std::lock_guard<std::mutex> lock(mutex_);
            generation = event->recorded;  // the latest record when the wait is issued
        }
        stream->enqueue([this, event, generation] {
            std::unique_lock<std::mutex> lock(mutex_);
            changed_.wait(lock, [&] { return event->completed >= generation; });
        });
    }
    void copy(unsigned char* destination, const unsigned char* source, std::size_t bytes, Stream stream) {
        ++copies;
        stream->enqueue([destination, source, bytes] {
            late();
            std::memcpy(destination, source, bytes);  // reads the source now, as a DMA does
        });
    }
    void kernel(Stream stream, std::function<void()> body) {
        stream->enqueue([body = std::move(body)] {
            late();
            body();
        });
    }
    void synchronize(Event event) {
        std::unique_lock<std::mutex> lock(mutex_);
        const std::size_t generation = event->recorded;
        changed_.wait(lock, [&] { return event->completed >= generation; });
    }
    void synchronize(Stream stream) {
        std::unique_lock<std::mutex> lock(mutex_);
        changed_.wait(lock, [&] { return stream->idle(); });
    }
    void synchronize_quietly(Stream stream) noexcept { synchronize(stream); }
    void select() { ++selects; }
    bool idle(Stream stream) {
        std::lock_guard<std::mutex> lock(mutex_);
        return stream->idle();
    }

    std::atomic<int> copies{0}, selects{0};

private:
    static void late() { std::this_thread::sleep_for(std::chrono::microseconds(200)); }

    std::mutex mutex_;
    std::condition_variable changed_;
    std::vector<std::unique_ptr<EventState>> events_;
    std::vector<std::unique_ptr<StreamState>> streams_;  // destroyed first (declared last)
};

std::vector<unsigned char> pattern(std::size_t bytes, unsigned seed) {
    std::vector<unsigned char> out(bytes);
    for (std::size_t i = 0; i < bytes; ++i) out[i] = static_cast<unsigned char>((i * 131 + seed * 17 + i / 7) & 0xff);
    return out;
}

// A stream of `slices` slices (the last shorter) of X (`width` bytes a row) and y (one byte a row).
struct Slices {
    Slices(std::int64_t slices, std::size_t rows, std::size_t width) : rows(rows), width(width) {
        const std::size_t total = rows * static_cast<std::size_t>(slices) - rows / 3;
        X = pattern(total * width, 1);
        y = pattern(total, 2);
    }
    std::size_t rows_of(std::int64_t k) const { return std::min(rows, y.size() - static_cast<std::size_t>(k) * rows); }
    std::vector<CopySpan> sources(std::int64_t k) const {
        const std::size_t first = static_cast<std::size_t>(k) * rows, n = rows_of(k);
        return {{nullptr, X.data() + first * width, n * width}, {nullptr, y.data() + first, n}};
    }
    std::vector<unsigned char> bytes(std::int64_t k) const {
        std::vector<unsigned char> out;
        for (const CopySpan& span : sources(k)) {
            const auto* from = static_cast<const unsigned char*>(span.source);
            out.insert(out.end(), from, from + span.bytes);
        }
        return out;
    }
    std::size_t rows, width;
    std::vector<unsigned char> X, y;
};

struct Staging {
    Staging(SimulatedDevice& device, std::size_t slots, std::size_t chunk, std::size_t buffer_bytes)
        : ring(slots * chunk), buffers{std::vector<unsigned char>(buffer_bytes), std::vector<unsigned char>(buffer_bytes)} {
        r.engine_stream = device.stream();
        r.copy_stream = device.stream();
        for (int b = 0; b < 2; ++b) {
            r.arrived[b] = device.event();
            r.released[b] = device.event();
            r.buffers[b] = buffers[b].data();
        }
        for (std::size_t s = 0; s < slots; ++s) {
            r.chunk_read.push_back(device.event());
            r.slots.push_back(ring.data() + s * chunk);
        }
        r.chunk_bytes = chunk;
    }
    std::vector<unsigned char> ring;
    std::vector<unsigned char> buffers[2];
    StagingResources<SimulatedDevice> r;
};

// The stream through stage_slices; each update checks its buffer on the engine stream when it starts
// and again in a trailing kernel after it returned (waiting for the device first when `waits`).
void run_and_check(std::size_t slots, std::size_t chunk, bool waits) {
    SimulatedDevice device;
    const Slices data(5, 40, 24);  // slices of 1,000 bytes (the last 880): several chunks each
    Staging staging(device, slots, chunk, data.rows * (data.width + 1));
    std::mutex mutex;
    std::vector<std::string> wrong;
    std::vector<std::int64_t> order;
    auto check = [&](std::int64_t k, int b, const char* when) {
        const auto expected = data.bytes(k);
        if (!std::equal(expected.begin(), expected.end(), staging.buffers[b].begin())) {
            std::lock_guard<std::mutex> lock(mutex);
            wrong.push_back("slice " + std::to_string(k) + " " + when);
        }
    };
    stage_slices<SimulatedDevice>(
        device, staging.r, 5, 2, [&](std::int64_t k) { return data.sources(k); },
        [&](std::int64_t k, int b) {
            order.push_back(k);
            EXPECT_EQ(b, static_cast<int>(k % 2));
            device.kernel(staging.r.engine_stream, [&, k, b] { check(k, b, "when its update started"); });
            if (waits) device.synchronize(staging.r.engine_stream);  // (the engine's outcome read-back)
            device.kernel(staging.r.engine_stream, [&, k, b] { check(k, b, "in its trailing kernel"); });
        });
    device.synchronize(staging.r.engine_stream);
    EXPECT_EQ(order, (std::vector<std::int64_t>{0, 1, 2, 3, 4}));
    EXPECT_TRUE(wrong.empty()) << wrong.size() << " wrong reads, the first: " << wrong.front();
    EXPECT_TRUE(device.idle(staging.r.copy_stream));
    EXPECT_EQ(device.selects.load(), 1);  // the stager's thread selected the device
}

}  // namespace

TEST(StagingSchedule, EachUpdateReadsItsWholeSliceWhenTheEngineWaitsInEachUpdate) {
    for (std::size_t slots : {std::size_t{1}, std::size_t{2}, std::size_t{4}})
        for (std::size_t chunk : {std::size_t{64}, std::size_t{333}, std::size_t{4096}}) run_and_check(slots, chunk, true);
}

TEST(StagingSchedule, EachUpdateReadsItsWholeSliceWhenTheEngineDoesNotWait) {
    for (std::size_t slots : {std::size_t{1}, std::size_t{4}})
        for (std::size_t chunk : {std::size_t{64}, std::size_t{4096}}) run_and_check(slots, chunk, false);
}

TEST(StagingSchedule, AFailingUpdateStopsTheStagingAndLeavesTheCopyStreamDrained) {
    SimulatedDevice device;
    const Slices data(6, 40, 24);
    Staging staging(device, 2, 64, data.rows * (data.width + 1));
    std::vector<std::int64_t> order;
    EXPECT_THROW(stage_slices<SimulatedDevice>(
                     device, staging.r, 6, 1, [&](std::int64_t k) { return data.sources(k); },
                     [&](std::int64_t k, int) {
                         order.push_back(k);
                         if (k == 2) throw std::runtime_error("slice 2 holds a NaN");
                     }),
                 std::runtime_error);
    EXPECT_EQ(order, (std::vector<std::int64_t>{0, 1, 2}));  // nothing after the failing slice
    EXPECT_TRUE(device.idle(staging.r.copy_stream));          // drained before it returned
    // slice 3 was being staged: abandoned at a chunk's end, so fewer copies than the whole stream's
    EXPECT_LT(device.copies.load(), static_cast<int>(6 * ((data.rows * (data.width + 1) + 63) / 64)));
}

// Host copies made in the background by a few threads: update_batches'
// pageable slices into pinned staging while the engine's thread drives the
// update of an earlier slice (host_staging.cu). One job at a time: a job is
// a list of (destination, source, bytes) spans, split over the threads by
// bytes; wait() returns when all of it is copied. Plain C++ (no CUDA), so
// the CPU tests run it.
#pragma once

#include <algorithm>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <mutex>
#include <thread>
#include <vector>

namespace rh::cuda {

struct CopySpan {
    void* destination = nullptr;
    const void* source = nullptr;
    std::size_t bytes = 0;
};

class HostSliceCopier {
public:
    explicit HostSliceCopier(int threads) {
        const int count = threads < 1 ? 1 : threads;
        workers_.reserve(static_cast<std::size_t>(count));
        try {
            for (int k = 0; k < count; ++k) workers_.emplace_back([this, k, count] { work(k, count); });
        } catch (...) {  // a thread that could not start: the ones that did stop (the destructor does not run)
            stop();
            throw;
        }
    }
    ~HostSliceCopier() { stop(); }
    HostSliceCopier(const HostSliceCopier&) = delete;
    HostSliceCopier& operator=(const HostSliceCopier&) = delete;

    // Starts copying `spans` (waits for the job before it first).
    void start(std::vector<CopySpan> spans) {
        wait();
        {
            std::lock_guard<std::mutex> lock(mutex_);
            spans_ = std::move(spans);
            remaining_ = static_cast<int>(workers_.size());
            ++generation_;
        }
        wake_.notify_all();
    }

    // Returns when the started job is copied.
    void wait() {
        std::unique_lock<std::mutex> lock(mutex_);
        done_.wait(lock, [this] { return remaining_ == 0; });
    }

    int threads() const noexcept { return static_cast<int>(workers_.size()); }

private:
    // Finishes the job in flight, then joins the workers.
    void stop() {
        {
            std::lock_guard<std::mutex> lock(mutex_);
            stopping_ = true;
        }
        wake_.notify_all();
        for (std::thread& worker : workers_) worker.join();
    }

    // Worker k of `count` copies its share of every span: the bytes
    // [total * k / count, total * (k + 1) / count) of the job's concatenation.
    void work(int k, int count) {
        std::uint64_t seen = 0;
        for (;;) {
            std::vector<CopySpan> spans;
            {
                std::unique_lock<std::mutex> lock(mutex_);
                wake_.wait(lock, [&] { return stopping_ || generation_ != seen; });
                if (stopping_ && generation_ == seen) return;
                seen = generation_;
                spans = spans_;
            }
            std::size_t total = 0;
            for (const CopySpan& span : spans) total += span.bytes;
            const std::size_t first = total / static_cast<std::size_t>(count) * static_cast<std::size_t>(k) +
                                      std::min(total % static_cast<std::size_t>(count), static_cast<std::size_t>(k));
            const std::size_t share = total / static_cast<std::size_t>(count) +
                                      (static_cast<std::size_t>(k) < total % static_cast<std::size_t>(count) ? 1 : 0);
            copy_range(spans, first, share);
            {
                std::lock_guard<std::mutex> lock(mutex_);
                if (--remaining_ == 0) done_.notify_all();
            }
        }
    }

    // The bytes [first, first + count) of the spans' concatenation.
    static void copy_range(const std::vector<CopySpan>& spans, std::size_t first, std::size_t count) {
        std::size_t offset = 0;
        for (const CopySpan& span : spans) {
            const std::size_t begin = first > offset ? first - offset : 0;
            const std::size_t end = std::min(span.bytes, first + count > offset ? first + count - offset : 0);
            if (begin < end)
                std::memcpy(static_cast<unsigned char*>(span.destination) + begin,
                            static_cast<const unsigned char*>(span.source) + begin, end - begin);
            offset += span.bytes;
            if (offset >= first + count) return;
        }
    }

    std::mutex mutex_;
    std::condition_variable wake_, done_;
    std::vector<CopySpan> spans_;
    std::uint64_t generation_ = 0;
    int remaining_ = 0;
    bool stopping_ = false;
    std::vector<std::thread> workers_;
};

}  // namespace rh::cuda

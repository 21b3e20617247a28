// A host slice on its way to the device through a small ring of pinned
// chunks (update_batches' staging, host_staging.cu): a background thread
// copies the slice's bytes chunk by chunk into the ring's slots (the
// copier's threads share each chunk) and hands each filled slot to a
// transfer, which the caller makes asynchronous (a copy-engine transfer on a
// stream of its own). A slot is refilled only after its last transfer is
// done (wait_slot), so the pinned memory is the ring's few chunks whatever
// the slice's size. One job (one slice) at a time; a job's failure is
// rethrown by wait(); the destructor abandons a job in flight at its next
// chunk. Plain C++ (no CUDA): the CPU tests run it with a
// simulated copy engine.
#pragma once

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <exception>
#include <functional>
#include <mutex>
#include <stdexcept>
#include <thread>
#include <utility>
#include <vector>

#include "host_slice_copier.hpp"

namespace rh::cuda {

// The bytes [first, first + count) of the concatenation of `sources`' spans
// (their destinations ignored) as spans into `destination`, in order.
inline std::vector<CopySpan> spans_within(const std::vector<CopySpan>& sources, std::size_t first, std::size_t count,
                                          unsigned char* destination) {
    std::vector<CopySpan> out;
    std::size_t offset = 0, written = 0;
    for (const CopySpan& span : sources) {
        const std::size_t begin = std::max(first, offset), end = std::min(first + count, offset + span.bytes);
        if (begin < end) {
            out.push_back({destination + written, static_cast<const unsigned char*>(span.source) + (begin - offset),
                           end - begin});
            written += end - begin;
        }
        offset += span.bytes;
        if (offset >= first + count) break;
    }
    return out;
}

// One slice to stage: its host spans (concatenated, they are the device
// buffer's bytes from offset 0) and what the caller does around the chunks.
struct StagingJob {
    std::vector<CopySpan> sources;
    std::function<void()> begin;  // before the first transfer (e.g. wait until the device buffer is free)
    std::function<void(int slot, std::size_t offset, std::size_t bytes)> transfer;  // slot -> device + offset
    std::function<void()> end;  // after the last transfer (e.g. record the slice's arrival)
};

class ChunkedSliceStager {
public:
    // `slots`: the ring's pinned chunks of `chunk_bytes` each. `wait_slot(s)`
    // returns once slot s's last transfer has read it. `thread_setup` runs
    // first on the background thread (e.g. select the device); its failure
    // is the constructor's.
    ChunkedSliceStager(std::vector<unsigned char*> slots, std::size_t chunk_bytes, int copy_threads,
                       std::function<void(int)> wait_slot, std::function<void()> thread_setup = {})
        : slots_(std::move(slots)),
          used_(slots_.size(), false),
          chunk_bytes_(chunk_bytes),
          wait_slot_(std::move(wait_slot)),
          copier_(copy_threads) {
        if (slots_.empty() || chunk_bytes_ == 0)
            throw std::invalid_argument("ChunkedSliceStager needs at least one slot of at least one byte");
        thread_ = std::thread([this, setup = std::move(thread_setup)] { serve(setup); });
        std::exception_ptr failure;
        {
            std::unique_lock<std::mutex> lock(mutex_);
            done_.wait(lock, [this] { return ready_; });
            failure = std::exchange(failure_, nullptr);
        }
        if (failure) {
            thread_.join();  // it has returned
            std::rethrow_exception(failure);
        }
    }
    // Abandons the job in flight (abandon()), then joins the thread.
    ~ChunkedSliceStager() {
        abandon();
        {
            std::lock_guard<std::mutex> lock(mutex_);
            stopping_ = true;
        }
        wake_.notify_all();
        thread_.join();
    }
    ChunkedSliceStager(const ChunkedSliceStager&) = delete;
    ChunkedSliceStager& operator=(const ChunkedSliceStager&) = delete;

    // Starts staging `job` (waits for the job before it, rethrowing its failure).
    void start(StagingJob job) {
        wait();
        {
            std::lock_guard<std::mutex> lock(mutex_);
            job_ = std::move(job);
            pending_ = true;
        }
        wake_.notify_all();
    }

    // Returns when the started job's last transfer and end() were issued;
    // rethrows the job's failure (once).
    void wait() {
        std::unique_lock<std::mutex> lock(mutex_);
        done_.wait(lock, [this] { return !pending_; });
        if (failure_) std::rethrow_exception(std::exchange(failure_, nullptr));
    }

    // The job in flight, and every later one, stops before its next chunk
    // without end() (its owner is going: an update failed, and its error
    // should not wait for the rest of a large slice to be copied). The
    // transfers already issued are the caller's to drain.
    void abandon() noexcept { abandon_.store(true, std::memory_order_relaxed); }

    std::size_t chunk_bytes() const noexcept { return chunk_bytes_; }

private:
    void serve(const std::function<void()>& setup) {
        std::exception_ptr setup_failure;
        try {
            if (setup) setup();
        } catch (...) {
            setup_failure = std::current_exception();
        }
        {
            std::lock_guard<std::mutex> lock(mutex_);
            failure_ = std::move(setup_failure);  // (this thread keeps no reference to it)
            ready_ = true;
            if (failure_) {
                done_.notify_all();
                return;
            }
        }
        done_.notify_all();
        for (;;) {
            StagingJob job;
            {
                std::unique_lock<std::mutex> lock(mutex_);
                wake_.wait(lock, [this] { return stopping_ || pending_; });
                if (!pending_) return;  // stopping, nothing left
                job = std::move(job_);
            }
            std::exception_ptr failure;
            try {
                run(job);
            } catch (...) {
                failure = std::current_exception();
            }
            {
                std::lock_guard<std::mutex> lock(mutex_);
                failure_ = std::move(failure);  // (this thread keeps no reference to it)
                pending_ = false;
            }
            done_.notify_all();
        }
    }

    void run(const StagingJob& job) {
        std::size_t total = 0;
        for (const CopySpan& span : job.sources) total += span.bytes;
        if (job.begin) job.begin();
        for (std::size_t offset = 0; offset < total; offset += chunk_bytes_) {
            if (abandon_.load(std::memory_order_relaxed)) return;  // the owner is going: no end()
            const int slot = next_slot_;
            next_slot_ = (next_slot_ + 1) % static_cast<int>(slots_.size());
            if (used_[static_cast<std::size_t>(slot)]) wait_slot_(slot);  // its last transfer has read it
            const std::size_t bytes = std::min(chunk_bytes_, total - offset);
            copier_.start(spans_within(job.sources, offset, bytes, slots_[static_cast<std::size_t>(slot)]));
            copier_.wait();
            // Marked before the transfer: one that queued its read and then failed is waited for too
            // (waiting for a slot no transfer read returns at once).
            used_[static_cast<std::size_t>(slot)] = true;
            job.transfer(slot, offset, bytes);
        }
        if (job.end) job.end();
    }

    std::vector<unsigned char*> slots_;
    std::vector<bool> used_;  // a slot handed to a transfer at least once (the background thread's own)
    std::size_t chunk_bytes_;
    int next_slot_ = 0;
    std::function<void(int)> wait_slot_;
    HostSliceCopier copier_;

    std::mutex mutex_;
    std::condition_variable wake_, done_;
    StagingJob job_;
    bool ready_ = false, pending_ = false, stopping_ = false;
    std::atomic<bool> abandon_{false};  // read by the job between chunks, without the lock
    std::exception_ptr failure_;
    std::thread thread_;
};

}  // namespace rh::cuda

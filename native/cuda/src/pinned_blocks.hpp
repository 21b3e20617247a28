// Pinned host memory the CUDA engines keep for their transfers (flags,
// sums, points, read-backs: PinnedArray in engine_internal.cuh), made once
// per process and reused. Pinning costs a fixed call and more per byte, and
// freeing pinned memory synchronizes the whole device; every new engine
// (a new estimator per stream: issue 28's cold latency class) paid both for
// its eight small arrays. A block given back is kept in its size class
// (powers of two from 256 B) for the next engine, never freed: the process
// holds what was in use at once. Plain C++ over an allocator: the CPU tests
// run it on malloc.
#pragma once

#include <array>
#include <cstddef>
#include <mutex>
#include <stdexcept>
#include <vector>

namespace rh::cuda {

// Allocator: static void* allocate(std::size_t bytes), throwing on failure.
template <class Allocator>
class BlockCache {
public:
    struct Block {
        void* pointer = nullptr;
        std::size_t bytes = 0;  // its class's size (at least the bytes asked for)
    };
    static constexpr int kSmallestClass = 8;  // 256 B
    static constexpr int kClasses = 40;       // up to 2^47 B

    // The size class of a request: the smallest power of two >= bytes, >= 256.
    static std::size_t class_bytes(std::size_t bytes) {
        std::size_t size = std::size_t{1} << kSmallestClass;
        for (int c = 0; c < kClasses; ++c, size <<= 1)
            if (bytes <= size) return size;
        throw std::length_error("a pinned block of more than 2^47 bytes");
    }

    // A block of at least `bytes`: one kept in its class, else a new one
    // (made outside the lock; its failure propagates, the cache unchanged).
    Block acquire(std::size_t bytes) {
        const std::size_t size = class_bytes(bytes);
        {
            std::lock_guard<std::mutex> lock(mutex_);
            auto& kept = idle_[index(size)];
            if (!kept.empty()) {
                void* pointer = kept.back();
                kept.pop_back();
                return {pointer, size};
            }
        }
        return {Allocator::allocate(size), size};
    }

    // Keeps `block` for the next acquire of its class. The caller's device
    // work on it must be done (an engine drains its stream first).
    void release(Block block) noexcept {
        if (block.pointer == nullptr) return;
        std::lock_guard<std::mutex> lock(mutex_);
        try {
            idle_[index(block.bytes)].push_back(block.pointer);
        } catch (...) {  // no room to keep it: left to the process's end
        }
    }

    // The blocks kept in the class of `bytes`.
    std::size_t idle(std::size_t bytes) const {
        std::lock_guard<std::mutex> lock(mutex_);
        return idle_[index(class_bytes(bytes))].size();
    }

private:
    static std::size_t index(std::size_t size) {
        std::size_t c = 0;
        for (std::size_t s = std::size_t{1} << kSmallestClass; s < size; s <<= 1) ++c;
        return c;
    }

    mutable std::mutex mutex_;
    std::array<std::vector<void*>, kClasses> idle_;
};

}  // namespace rh::cuda

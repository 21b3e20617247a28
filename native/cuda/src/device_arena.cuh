// Device arrays that live as views of one allocation: a new engine makes one
// cudaMalloc (and one cudaFree when it goes) for the arrays sized by (p, d)
// alone, where it made one per array. Each view is followed by a guard of
// 256 unused bytes (after its own padding to 256) and registered with the
// NVTX memory API as a region of a sub-allocator heap, so compute-sanitizer's
// memcheck (--nvtx yes, its default since CUDA 12) reports an access that
// runs off a view by up to 256 bytes (into its padding or its guard), as it
// did when each array was an allocation of its own. (An access that lands in
// another view is a valid address to memcheck, as it was across separate
// allocations.)
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "engine_internal.cuh"

namespace rh::cuda {

// Where each array of one arena goes: offsets aligned as cudaMalloc's (256
// bytes), each array at least one element, a guard unit after each.
class ArenaLayout {
public:
    template <class U>
    void add(DeviceArray<U>& array, std::int64_t count) {
        const std::int64_t n = count < 1 ? 1 : count;
        const std::size_t offset = bytes_;
        const std::size_t extent = sizeof(U) * static_cast<std::size_t>(n);
        bytes_ += (extent + kAlignment - 1) / kAlignment * kAlignment + kAlignment;  // padding, guard
        views_.push_back({offset, extent, n, &array, &adopt<U>, &forget<U>});
    }
    std::size_t bytes() const noexcept { return bytes_; }
    // An array's place: its offset, exact extent in bytes and element count,
    // and how it becomes a view of the arena's storage and stops being one.
    struct View {
        std::size_t offset, extent;
        std::int64_t count;
        void* array;
        void (*adopt)(void* array, int device, unsigned char* data, std::int64_t count);
        void (*forget)(void* array, const unsigned char* begin, const unsigned char* end);
    };

private:
    template <class U>
    static void adopt(void* array, int device, unsigned char* data, std::int64_t count) {
        static_cast<DeviceArray<U>*>(array)->adopt_view(device, reinterpret_cast<U*>(data), count);
    }
    // Resets the array if it still views [begin, end) (an array that grew
    // onto storage of its own keeps it).
    template <class U>
    static void forget(void* array, const unsigned char* begin, const unsigned char* end) {
        auto* typed = static_cast<DeviceArray<U>*>(array);
        const auto* data = reinterpret_cast<const unsigned char*>(typed->data());
        if (data >= begin && data < end) typed->reset();
    }

private:
    friend class DeviceArena;
    static constexpr std::size_t kAlignment = 256;
    std::size_t bytes_ = 0;
    std::vector<View> views_;
};

// One allocation holding a layout's arrays; placed once, or again after a
// release (its arrays move; their contents do not survive). Declare it
// before the arrays it holds, so they (views, which release nothing) go
// first.
class DeviceArena {
public:
    DeviceArena() = default;
    DeviceArena(const DeviceArena&) = delete;
    DeviceArena& operator=(const DeviceArena&) = delete;
    ~DeviceArena();

    // Allocates the layout's bytes on `device` (throws Failure, out of memory
    // included, before any array changes), makes every array its view and
    // registers the views with NVTX. Returns whether it allocated (a layout
    // of no arrays allocates nothing). Throws Failure(invalid_state) if the
    // arena was placed before: its arrays would move.
    bool place(int device, const ArenaLayout& layout);
    bool placed() const noexcept { return storage_.data() != nullptr; }
    // Resets the arrays that are still its views, then frees the storage
    // (after the device is past every use of it: cudaFree waits), so that
    // the arena may be placed again. Its arrays must still exist: the
    // destructor, which runs after theirs, frees the storage alone.
    void release() noexcept;

private:
    void free_storage() noexcept;

    DeviceArray<unsigned char> storage_;
    std::vector<ArenaLayout::View> views_;  // the placed layout's
    void* heap_ = nullptr;  // the NVTX heap (nvtxMemHeapHandle_t) of storage_
};

}  // namespace rh::cuda

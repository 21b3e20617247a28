// Row-sized buffers that the narrow passes stream through together (r, the
// trial residuals, w, s, c, the column panels) start on a cache line, and
// each at its own offset within a 4 KiB page.
//
// Why: std::vector's storage of a large buffer starts 16 bytes past a
// cache line, so every 64-byte vector load of a panel or a row buffer
// spanned two lines (docs/native-cpu.md, "Measurements behind the code").
// Staggering the page offsets is a precaution against 4K aliasing (a
// pass's loads of r[i + 8] and its stores to r_trial[i] looking alike to
// the store-to-load check when the buffers sit 64 bytes apart modulo 4 KiB,
// as consecutive aligned allocations would).
//
// Allocation k starts (k mod 8) * 512 bytes into a 4 KiB-aligned block: any
// eight buffers allocated in a row are 512 bytes apart (modulo 4 KiB).
// The block's start is recovered from the pointer (it is the pointer rounded
// down to 4 KiB), so nothing is stored beside the buffer.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <new>
#include <vector>

namespace rh::cpu {

inline constexpr std::size_t kPageBytes = 4096;

// The next allocation's offset into its page.
inline std::size_t next_stagger() noexcept {
    static std::atomic<unsigned> allocations{0};
    const unsigned k = allocations.fetch_add(1, std::memory_order_relaxed);
    return (k % 8) * (kPageBytes / 8);
}

template <class T>
struct StaggeredAllocator {
    using value_type = T;
    static_assert(alignof(T) <= 64, "staggered buffers are aligned to 64 bytes");

    StaggeredAllocator() noexcept = default;
    template <class U>
    StaggeredAllocator(const StaggeredAllocator<U>&) noexcept {}

    T* allocate(std::size_t count) {
        if (count > (SIZE_MAX - 2 * kPageBytes) / sizeof(T)) throw std::bad_array_new_length();
        const std::size_t offset = next_stagger();
        auto* block = static_cast<std::byte*>(::operator new(count * sizeof(T) + kPageBytes, std::align_val_t{kPageBytes}));
        return reinterpret_cast<T*>(block + offset);
    }
    void deallocate(T* pointer, std::size_t) noexcept {
        const auto address = reinterpret_cast<std::uintptr_t>(pointer);
        ::operator delete(reinterpret_cast<void*>(address - address % kPageBytes), std::align_val_t{kPageBytes});
    }
    template <class U>
    bool operator==(const StaggeredAllocator<U>&) const noexcept { return true; }
};

// A std::vector whose storage is staggered as above.
template <class T>
using StaggeredVector = std::vector<T, StaggeredAllocator<T>>;

}  // namespace rh::cpu

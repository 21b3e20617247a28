// Buffers grow only when a larger batch (or parameter count) arrives, and
// every growth is counted, so tests prove that steady-state updates
// allocate nothing. A test can make the n-th growth fail as an exhausted
// allocator would (fail_growth), to prove that a failed update leaves the
// caller's state and the engine usable.
#pragma once

#include <cstdint>
#include <new>

namespace rh::cpu {

class BufferGrowth {
public:
    template <class V>
    void grow(V& buffer, std::int64_t size) {
        if (static_cast<std::int64_t>(buffer.size()) >= size) return;
        if (fail_countdown_ > 0 && --fail_countdown_ == 0) throw std::bad_alloc();
        buffer.resize(static_cast<std::size_t>(size));
        ++events_;
    }
    std::int64_t events() const noexcept { return events_; }

    // Test hook (fault injection): the n-th growth from now throws
    // std::bad_alloc instead of allocating; 0 disarms it.
    void fail_growth(std::int64_t n) noexcept { fail_countdown_ = n; }

private:
    std::int64_t events_ = 0;
    std::int64_t fail_countdown_ = 0;
};

}  // namespace rh::cpu

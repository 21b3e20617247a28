// Buffers grow only when a larger batch (or parameter count) arrives, and
// every growth is counted, so tests prove that steady-state updates
// allocate nothing.
#pragma once

#include <cstdint>

namespace rh::cpu {

class BufferGrowth {
public:
    template <class V>
    void grow(V& buffer, std::int64_t size) {
        if (static_cast<std::int64_t>(buffer.size()) >= size) return;
        buffer.resize(static_cast<std::size_t>(size));
        ++events_;
    }
    std::int64_t events() const noexcept { return events_; }

private:
    std::int64_t events_ = 0;
};

}  // namespace rh::cpu

// Bytes that differ from their neighbours and from another seed's: what the
// host-copy tests (test_host_slice_copier.cpp, test_chunk_stager.cpp) send
// and compare, so a byte copied to the wrong place or from the wrong source
// shows.
#pragma once

#include <cstddef>
#include <vector>

namespace rh::test {

inline std::vector<unsigned char> pattern(std::size_t bytes, unsigned seed) {
    std::vector<unsigned char> out(bytes);
    for (std::size_t i = 0; i < bytes; ++i) out[i] = static_cast<unsigned char>((i * 131 + seed * 17 + i / 7) & 0xff);
    return out;
}

}  // namespace rh::test

// A non-owning view of one batch: X (rows x features, row-major), y, and
// optional frequency weights (nullptr means all ones).
#pragma once

#include <cstdint>

namespace rh::core {

template <class T>
struct BatchView {
    const T* X = nullptr;
    const T* y = nullptr;
    const T* sample_weight = nullptr;
    std::int64_t rows = 0;
    std::int64_t features = 0;
};

}  // namespace rh::core

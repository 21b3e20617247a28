// Non-owning views of the caller's arrays: row-major, C-contiguous.
#pragma once

#include <cstdint>
#include <vector>

namespace renewable_huber {

template <class T>
struct Matrix {
    const T* data = nullptr;
    std::int64_t rows = 0;
    std::int64_t cols = 0;
};

// A vector; `data == nullptr` stands for "not given" (unit sample weights).
template <class T>
struct Vector {
    const T* data = nullptr;
    std::int64_t size = 0;
};

template <class T>
Matrix<T> matrix(const std::vector<T>& values, std::int64_t rows, std::int64_t cols) {
    return {values.data(), rows, cols};
}

template <class T>
Vector<T> vector(const std::vector<T>& values) {
    return {values.data(), static_cast<std::int64_t>(values.size())};
}

}  // namespace renewable_huber

// The CPU engine's finiteness test of input arrays: core's loop
// (core/finite_values.hpp) compiled for several instruction-set levels; it
// reads every X, y and weight of every batch.
#pragma once

#include <cstdint>

namespace rh::cpu {

bool all_finite(const float* values, std::int64_t count) noexcept;
bool all_finite(const double* values, std::int64_t count) noexcept;

// As a function object for core::check_batch_values.
struct MultiversionFiniteness {
    template <class T>
    bool operator()(const T* values, std::int64_t count) const noexcept {
        return all_finite(values, count);
    }
};

}  // namespace rh::cpu

#include "cpu/platform/finite_scan.hpp"

#include "core/finite_values.hpp"
#include "cpu/platform/isa_dispatch.hpp"

namespace rh::cpu {

RH_MULTIVERSION bool all_finite(const float* values, std::int64_t count) noexcept {
    return core::all_finite_values(values, count);
}
RH_MULTIVERSION bool all_finite(const double* values, std::int64_t count) noexcept {
    return core::all_finite_values(values, count);
}

}  // namespace rh::cpu

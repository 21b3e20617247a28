#include "cpu/platform/isa_dispatch.hpp"

#include <cstdlib>
#include <cstring>
#include <initializer_list>

namespace rh::cpu {

namespace {

IsaLevel detected_level() noexcept {
#if RH_PER_TARGET
    __builtin_cpu_init();
    if (__builtin_cpu_supports("x86-64-v4")) return IsaLevel::x86_64_v4;
    if (__builtin_cpu_supports("x86-64-v3")) return IsaLevel::x86_64_v3;
#endif
    return IsaLevel::baseline;
}

}  // namespace

const char* isa_level_name(IsaLevel level) noexcept {
    switch (level) {
        case IsaLevel::x86_64_v4: return "x86-64-v4";
        case IsaLevel::x86_64_v3: return "x86-64-v3";
        default: return "baseline";
    }
}

IsaLevel isa_level() noexcept {
    static const IsaLevel level = [] {
        IsaLevel chosen = detected_level();
        if (const char* cap = std::getenv("RH_NATIVE_ISA_LEVEL")) {
            for (IsaLevel candidate : {IsaLevel::baseline, IsaLevel::x86_64_v3, IsaLevel::x86_64_v4})
                if (std::strcmp(cap, isa_level_name(candidate)) == 0 && candidate < chosen) chosen = candidate;
        }
        return chosen;
    }();
    return level;
}

}  // namespace rh::cpu

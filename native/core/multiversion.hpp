// RH_MULTIVERSION: compile a hot loop for several x86-64 instruction-set
// levels and pick one at load time (GCC/Clang function multiversioning via
// an ifunc resolver), so the wheel stays portable (no -march=native) and
// still runs AVX2/AVX-512 code where the CPU has it. Use it only on
// functions defined (and explicitly instantiated) in exactly one .cpp file.
#pragma once

#if defined(__x86_64__) && defined(__ELF__) && (defined(__GNUC__) || defined(__clang__)) && \
    !defined(RH_NO_MULTIVERSION)
#define RH_MULTIVERSION __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
#define RH_PER_TARGET 1
#else
#define RH_MULTIVERSION
#define RH_PER_TARGET 0
#endif

// The other way, for kernels built on wide vector types: a file includes
// its kernel once per level inside `#pragma GCC target(...)` regions
// (core/per_target_kernels.inc) and picks one with RH_BY_LEVEL / isa_level(). Helpers inlined into a
// target_clones clone were lowered for the baseline first, and GCC 12 then
// builds each 32/64-byte broadcast lane by lane; under the pragma every
// helper is compiled for the level.

#include <cstdint>

// `return level::name(args...)` for the level isa_level() picked, inside a
// namespace that included core/per_target_kernels.inc.
#if RH_PER_TARGET
#define RH_BY_LEVEL(name, ...)                                                 \
    switch (::rh::core::isa_level()) {                                         \
        case ::rh::core::IsaLevel::x86_64_v4: return v4::name(__VA_ARGS__);    \
        case ::rh::core::IsaLevel::x86_64_v3: return v3::name(__VA_ARGS__);    \
        default: return baseline::name(__VA_ARGS__);                           \
    }
#else
#define RH_BY_LEVEL(name, ...) return baseline::name(__VA_ARGS__);
#endif

namespace rh::core {

enum class IsaLevel : std::uint8_t { baseline, x86_64_v3, x86_64_v4 };

// The level the per-target kernels use: the highest this CPU runs (what
// target_clones' resolver picks), capped by the environment variable
// RH_NATIVE_ISA_LEVEL ("baseline", "x86-64-v3", "x86-64-v4") when set, so
// tests can run every level's kernels on one machine. Read once.
IsaLevel isa_level() noexcept;

// "baseline", "x86-64-v3" or "x86-64-v4".
const char* isa_level_name(IsaLevel level) noexcept;

}  // namespace rh::core

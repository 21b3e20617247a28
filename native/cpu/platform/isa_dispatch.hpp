// The CPU engine's instruction-set dispatch: hot loops are compiled for
// several x86-64 levels and one is picked at run time, so the wheel stays
// portable (no -march=native) and still runs AVX2/AVX-512 code where the CPU
// has it. Two mechanisms, for two kinds of kernel:
//
// * RH_MULTIVERSION (GCC/Clang function multiversioning through an ifunc
//   resolver) for plain loops the compiler vectorizes; only on functions
//   defined and explicitly instantiated in exactly one .cpp file;
// * per-level copies for kernels built on wide vector types: a kernel file
//   is included once per level inside `#pragma GCC target(...)` regions
//   (cpu/platform/per_target_kernels.inc) and RH_BY_LEVEL picks a copy with
//   isa_level(). Helpers inlined into a target_clones clone were lowered for
//   the baseline first, and GCC 12 then builds each 32/64-byte broadcast
//   lane by lane; under the pragma every helper is compiled for the level.
//
// Both instantiate their templates through RH_FOR_EACH_FLOAT.
#pragma once

#include <cstdint>

#if defined(__x86_64__) && defined(__ELF__) && (defined(__GNUC__) || defined(__clang__)) && \
    !defined(RH_NO_MULTIVERSION)
#define RH_MULTIVERSION __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
#define RH_PER_TARGET 1
#else
#define RH_MULTIVERSION
#define RH_PER_TARGET 0
#endif

// `return level::name(args...)` for the level isa_level() picked, inside a
// namespace that included cpu/platform/per_target_kernels.inc.
#if RH_PER_TARGET
#define RH_BY_LEVEL(name, ...)                                                 \
    switch (::rh::cpu::isa_level()) {                                          \
        case ::rh::cpu::IsaLevel::x86_64_v4: return v4::name(__VA_ARGS__);     \
        case ::rh::cpu::IsaLevel::x86_64_v3: return v3::name(__VA_ARGS__);     \
        default: return baseline::name(__VA_ARGS__);                           \
    }
#else
#define RH_BY_LEVEL(name, ...) return baseline::name(__VA_ARGS__);
#endif

// The one instantiation mechanism of the engine's kernels: a file defines
// RH_INSTANTIATE(T) as its explicit instantiations for one dtype and
// expands RH_FOR_EACH_FLOAT(RH_INSTANTIATE).
#define RH_FOR_EACH_FLOAT(INSTANTIATE) INSTANTIATE(float) INSTANTIATE(double)

namespace rh::cpu {

enum class IsaLevel : std::uint8_t { baseline, x86_64_v3, x86_64_v4 };

// The level the per-target kernels use: the highest this CPU runs (what
// target_clones' resolver picks), capped by the environment variable
// RH_NATIVE_ISA_LEVEL ("baseline", "x86-64-v3", "x86-64-v4") when set, so
// tests can run every level's kernels on one machine. Read once.
IsaLevel isa_level() noexcept;

// "baseline", "x86-64-v3" or "x86-64-v4".
const char* isa_level_name(IsaLevel level) noexcept;

}  // namespace rh::cpu

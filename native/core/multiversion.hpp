// RH_MULTIVERSION: compile a hot loop for several x86-64 instruction-set
// levels and pick one at load time (GCC/Clang function multiversioning via
// an ifunc resolver), so the wheel stays portable (no -march=native) and
// still runs AVX2/AVX-512 code where the CPU has it. Use it only on
// functions defined (and explicitly instantiated) in exactly one .cpp file.
#pragma once

#if defined(__x86_64__) && defined(__ELF__) && (defined(__GNUC__) || defined(__clang__)) && \
    !defined(RH_NO_MULTIVERSION)
#define RH_MULTIVERSION __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
#else
#define RH_MULTIVERSION
#endif

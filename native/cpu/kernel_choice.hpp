// Which of the engine's two kernel paths absorbs a batch (docs/native-cpu.md,
// "Two kernel paths"):
//
//   reference_order : mirrors the NumPy reference operation by operation
//                     (GEMM Gram of Z' and Z*c, LU, NumPy's pairwise sums,
//                     the same CBLAS calls). Bit-faithful enough to reproduce
//                     line-search decisions made at the rounding noise floor,
//                     which the golden corpora contain; as slow as NumPy's
//                     arithmetic on large batches.
//   fast            : the same contract with its own rounding: no design
//                     copy, O(n) fused passes, SYRK Gram updated
//                     incrementally (only rows whose weight changed),
//                     Cholesky first, O(n) backtracking. Agrees with the
//                     reference within the contract tolerances wherever the
//                     iteration stops above the noise floor.
//   automatic       : fast when rows * d * d > kFastKernelThreshold, else
//                     reference_order (the corpora are far below it).
#pragma once

#include <cstdint>

#include "cpu/cpu_diagnostics.hpp"

namespace rh::cpu {

enum class KernelChoice : int { automatic = 0, reference_order = 1, fast = 2 };

// rows * d * d above which `automatic` takes the fast path: 2^18. The latency
// class (4096 x 17) is 1.18e6, the largest corpus batch is below 2^15.
inline constexpr std::int64_t kFastKernelThreshold = std::int64_t{1} << 18;

inline KernelPath choose_kernel_path(KernelChoice choice, std::int64_t rows, std::int64_t d) noexcept {
    if (choice == KernelChoice::fast) return KernelPath::fast;
    if (choice == KernelChoice::reference_order) return KernelPath::reference_order;
    return rows * d * d > kFastKernelThreshold ? KernelPath::fast : KernelPath::reference_order;
}

}  // namespace rh::cpu

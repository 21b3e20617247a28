// The block barrier of every kernel's helpers: PTX `barrier.sync 0`, the
// form without `.aligned`.
//
// `__syncthreads` is the aligned form. PTX leaves it undefined when the
// block's threads reach it under a condition they evaluate differently, even
// at the same instruction. The block solver's warp 0 runs core's driver and
// reaches the evaluator's barriers (through run_command) from the driver's
// branch, while the other warps reach them from their serving loop.
// compute-sanitizer's synccheck reported exactly that on an H100
// (docs/native-cuda.md, "The pending set's first GPU run"). The non-aligned
// form allows it. It is also what cooperative groups' grid.sync() uses
// inside.
#pragma once

namespace rh::cuda {

__device__ __forceinline__ void block_barrier() { __barrier_sync(0); }

}  // namespace rh::cuda

// The last block of a group: how a kernel whose blocks each leave a part of
// a result in global memory lets the one block that finishes last combine
// the parts, in the same launch (the "threadfence reduction": no second
// kernel, no grid-wide barrier, no cooperative launch).
//
// Each group of blocks (one result) has a counter in device memory, zero
// between launches: each block adds one when its parts are written; the
// block that brings it to the group's size is the last, reads every part
// and sets the counter back to zero (so the next launch, or a CUDA graph's
// next replay, finds it zero). The counter decides only which block
// combines, never the order of a sum: the last block adds the parts in a
// fixed order, so a result's bits do not depend on scheduling.
#pragma once

#include <cstddef>

#include "block_barrier.cuh"

namespace rh::cuda {

#if defined(__CUDACC__)
// Every thread of the block calls it after writing its block's parts to
// global memory; returns true in every thread of the group's last block
// (whose reads of the parts must bypass L1: load_part).
__device__ inline bool last_block_of_group(unsigned* counter, unsigned group_blocks) {
    __shared__ bool last;
    __threadfence();  // this thread's parts, visible device-wide before the block's arrival
    block_barrier();
    if (threadIdx.x == 0) {
        const unsigned arrived = atomicAdd(counter, 1u) + 1u;
        last = arrived == group_blocks;
        if (last) {
            *counter = 0u;   // ready for the next launch: every block of this one has arrived
            __threadfence();  // the other blocks' parts, seen after their arrivals
        }
    }
    block_barrier();
    const bool result = last;
    block_barrier();  // `last` read by every thread before a later call writes it
    return result;
}

// A part another block wrote (from L2: an L1 line this SM read earlier may be stale).
__device__ inline double load_part(const double* part) { return __ldcg(part); }

// The largest of `count` non-negative parts other blocks wrote (parts[0],
// parts[stride], ...; a NaN part is passed over), by the 32 threads of one
// warp: every lane calls it, lane 0 gets the maximum. (A maximum: the same
// value in any order.)
__device__ inline double warp_max_of_parts(const double* parts, unsigned count, unsigned stride) {
    double most = 0.0;
    for (unsigned b = threadIdx.x & 31u; b < count; b += 32) {
        const double value = load_part(parts + static_cast<std::size_t>(b) * stride);
        most = value > most ? value : most;
    }
    for (int shift = 16; shift > 0; shift >>= 1) {
        const double other = __shfl_down_sync(0xffffffffu, most, shift);
        most = other > most ? other : most;
    }
    return most;
}
#endif

}  // namespace rh::cuda

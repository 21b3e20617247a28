// A process for arena_memcheck.sh: two arrays placed in one DeviceArena, then
// one kernel writes one double through the first array's pointer at the index
// the argument names:
//   inside   its last element (4 of 5): a legal write;
//   padding  one past its end (5), in its padding to 256 bytes;
//   guard    32 (256 bytes on), in the guard unit after the padding;
//   next     64 (512 bytes on): the second array's first element, a valid
//            address (memcheck cannot tell which array a pointer meant).
// Without a tool each write lands in the allocation and the process exits 0;
// memcheck reports padding and guard only if the arena registered its views.
// Exits 77 where no device can be used (ctest's skip), 2 on bad usage.
#include <cuda_runtime.h>

#include <cstdio>
#include <cstring>

#include "device_arena.cuh"

namespace {

__global__ void write_one(double* array, int index) { array[index] = 1.0; }

}  // namespace

int main(int argc, char** argv) {
    int devices = 0;
    if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) return 77;
    if (argc != 2) return 2;
    int index = -1;
    if (std::strcmp(argv[1], "inside") == 0) index = 4;
    if (std::strcmp(argv[1], "padding") == 0) index = 5;
    if (std::strcmp(argv[1], "guard") == 0) index = 32;
    if (std::strcmp(argv[1], "next") == 0) index = 64;
    if (index < 0) return 2;
    rh::cuda::DeviceArray<double> first, second;
    rh::cuda::DeviceArena arena;  // declared after the views here: they release nothing
    rh::cuda::ArenaLayout layout;
    layout.add(first, 5);
    layout.add(second, 3);
    arena.place(0, layout);
    if (second.data() != first.data() + 64) {
        std::fprintf(stderr, "the second view is not 512 bytes after the first (padding, guard)\n");
        return 1;
    }
    write_one<<<1, 1>>>(first.data(), index);
    const cudaError_t status = cudaDeviceSynchronize();
    std::printf("%s: %s\n", argv[1], cudaGetErrorString(status));
    return status == cudaSuccess ? 0 : 1;
}

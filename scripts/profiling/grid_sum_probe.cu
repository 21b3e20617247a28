// What one sum over the blocks of a grid costs on the device, the way the
// block solver forms it (block_rows.cuh's residual: block_sum, the block's
// partial to global memory, cooperative_groups' grid.sync(), every warp
// adding the partials: launch.cuh's warp_sum_over_blocks), against the
// same sum over one thread-block cluster (the cluster barrier, the partials
// read from the other blocks' shared memory). Issue 28's question before a
// cluster solver is built (scripts/device/pending/README.md, item 5).
//
//   nvcc -O3 -std=c++17 -arch=sm_90 -I native/cuda/src -I native -o grid_sum_probe scripts/profiling/grid_sum_probe.cu
//   ./grid_sum_probe [sums per launch, default 200]
//
// Prints one JSON object: per way and block count, the median over launches
// of block 0's clock64 cycles per sum, and the sums' value check.
#include <cooperative_groups.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "launch.cuh"

namespace cg = cooperative_groups;
using rh::cuda::block_sum;
using rh::cuda::kThreads;
using rh::cuda::warp_sum_over_blocks;

namespace {

constexpr int kLaunches = 9;

// `sums` times: a value a thread, summed over the grid; block 0's cycles.
__global__ void grid_sums(int sums, double* partials, double* check, long long* cycles) {
    auto grid = cg::this_grid();
    double carried = 0.0;
    const long long start = clock64();
    for (int s = 0; s < sums; ++s) {
        const double value = block_sum(1.0 + carried * 0.0);  // depends on the last sum: no overlap
        if (threadIdx.x == 0) partials[blockIdx.x * 2 + (s & 1)] = value;  // two slots: no reuse race
        grid.sync();
        carried = warp_sum_over_blocks(partials, 2, s & 1, gridDim.x);
    }
    const long long stop = clock64();
    if (blockIdx.x == 0 && threadIdx.x == 0) {
        *cycles = stop - start;
        *check = carried;
    }
}

// The same over a cluster that is the whole grid: the partials in each
// block's shared memory (two slots), read through cluster.map_shared_rank.
__global__ void cluster_sums(int sums, double* check, long long* cycles) {
    __shared__ double slot[2];
    auto cluster = cg::this_cluster();
    const unsigned blocks = cluster.num_blocks();
    double carried = 0.0;
    const long long start = clock64();
    for (int s = 0; s < sums; ++s) {
        const double value = block_sum(1.0 + carried * 0.0);
        if (threadIdx.x == 0) slot[s & 1] = value;
        cluster.sync();  // the slot written before, and the slot of s - 2 read by everyone before
        double sum = 0.0;
        for (unsigned b = threadIdx.x & 31; b < blocks; b += 32) sum += cluster.map_shared_rank(slot, b)[s & 1];
        for (int shift = 16; shift > 0; shift >>= 1) sum += __shfl_down_sync(0xffffffffu, sum, shift);
        carried = __shfl_sync(0xffffffffu, sum, 0);
    }
    cluster.sync();  // no block leaves while another may still read its slots
    const long long stop = clock64();
    if (blockIdx.x == 0 && threadIdx.x == 0) {
        *cycles = stop - start;
        *check = carried;
    }
}

#define CHECK(call)                                                                          \
    do {                                                                                     \
        const cudaError_t e = (call);                                                        \
        if (e != cudaSuccess) {                                                              \
            std::fprintf(stderr, "%s: %s\n", #call, cudaGetErrorString(e));                 \
            std::exit(1);                                                                    \
        }                                                                                    \
    } while (0)

double median(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
    int sums = argc > 1 ? std::atoi(argv[1]) : 200;
    double *partials, *check;
    long long* cycles;
    CHECK(cudaMalloc(&partials, 2 * 1024 * sizeof(double)));
    CHECK(cudaMalloc(&check, sizeof(double)));
    CHECK(cudaMalloc(&cycles, sizeof(long long)));
    CHECK(cudaFuncSetAttribute(cluster_sums, cudaFuncAttributeNonPortableClusterSizeAllowed, 1));
    std::printf("{\"sums_per_launch\": %d, \"threads\": %d, \"cases\": [", sums, kThreads);
    bool first = true;
    for (const char* way : {"grid_sync", "cluster"}) {
        const bool cluster = way[0] == 'c';
        for (int blocks : {8, 16, 32, 128}) {
            if (cluster && blocks > 16) continue;
            std::vector<double> per_sum;
            double value = 0.0;
            for (int launch = 0; launch < kLaunches; ++launch) {
                if (cluster) {
                    cudaLaunchConfig_t config{};
                    config.gridDim = dim3(blocks);
                    config.blockDim = dim3(kThreads);
                    cudaLaunchAttribute attribute{};
                    attribute.id = cudaLaunchAttributeClusterDimension;
                    attribute.val.clusterDim.x = blocks;
                    attribute.val.clusterDim.y = 1;
                    attribute.val.clusterDim.z = 1;
                    config.attrs = &attribute;
                    config.numAttrs = 1;
                    CHECK(cudaLaunchKernelEx(&config, cluster_sums, sums, check, cycles));
                } else {
                    void* args[] = {&sums, &partials, &check, &cycles};
                    CHECK(cudaLaunchCooperativeKernel(reinterpret_cast<void*>(grid_sums), dim3(blocks), dim3(kThreads),
                                                      args, 0, nullptr));
                }
                CHECK(cudaDeviceSynchronize());
                long long host_cycles = 0;
                CHECK(cudaMemcpy(&host_cycles, cycles, sizeof(host_cycles), cudaMemcpyDeviceToHost));
                CHECK(cudaMemcpy(&value, check, sizeof(value), cudaMemcpyDeviceToHost));
                if (launch > 0) per_sum.push_back(static_cast<double>(host_cycles) / sums);  // the first warms up
            }
            std::printf("%s{\"way\": \"%s\", \"blocks\": %d, \"cycles_per_sum\": %.0f, \"sum\": %.0f, \"expected\": %d}",
                        first ? "" : ", ", way, blocks, median(per_sum), value, blocks * kThreads);
            first = false;
        }
    }
    std::printf("]}\n");
    return 0;
}

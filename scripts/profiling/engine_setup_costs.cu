// What a new CUDA engine's setup calls cost on this machine (issue 28: a cold
// latency-class stream builds a new estimator, so a new engine, inside its
// timer): in a process whose CUDA context is already up, the median over
// --repeats of each call pair the engine's constructor and destructor make
// (device_context.cu, workspace.cu, linear_solver.cu): a non-blocking
// stream, the cuBLAS and cuSOLVER handles, cudaMalloc/cudaFree of the sizes
// a d = 17 engine reserves, and a memset with a stream synchronization.
// Prints one JSON object.
//
//   nvcc -O2 -std=c++17 -o /tmp/engine_setup_costs scripts/profiling/engine_setup_costs.cu -lcublas -lcusolver
//   /tmp/engine_setup_costs [repeats]
#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <cusolverDn.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <vector>

namespace {

#define CHECK(call)                                                                                   \
    do {                                                                                              \
        if (!(call)) {                                                                                \
            std::fprintf(stderr, "engine_setup_costs: %s failed at line %d\n", #call, __LINE__);      \
            std::exit(1);                                                                             \
        }                                                                                             \
    } while (0)

double median_us(int repeats, const std::function<void()>& once) {
    std::vector<double> times;
    for (int r = 0; r < repeats; ++r) {
        const auto start = std::chrono::steady_clock::now();
        once();
        times.push_back(std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start).count());
    }
    std::sort(times.begin(), times.end());
    return times[times.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
    const int repeats = argc > 1 ? std::atoi(argv[1]) : 200;
    CHECK(cudaFree(nullptr) == cudaSuccess);  // the context, outside every timer
    // The byte sizes of a float64 d = 17 engine's reservations (p = 16): vectors, matrices, the block solver's.
    const int d = 17;
    std::vector<std::size_t> sizes;
    for (int i = 0; i < 7; ++i) sizes.push_back(8 * d);
    for (int i = 0; i < 5; ++i) sizes.push_back(8 * d * d);
    for (std::size_t s : {128, 8 * 4 * 34, 8 * 128 * 16, 8 * 8, 8 * 1024, 8, 8, 8 * 2 * 289, 8 * 64 * 17,
                          8 * 128, 16 * 128, 8 * 128 * 40, 64, 8 * 289, 8 * 289, 8 * 17, 4 * 2, 8 * 1024})
        sizes.push_back(s);

    cudaStream_t stream = nullptr;
    const double stream_us = median_us(repeats, [&] {
        CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking) == cudaSuccess);
        CHECK(cudaStreamDestroy(stream) == cudaSuccess);
    });
    CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking) == cudaSuccess);
    const double blas_us = median_us(repeats, [&] {
        cublasHandle_t blas = nullptr;
        CHECK(cublasCreate(&blas) == CUBLAS_STATUS_SUCCESS);
        CHECK(cublasSetStream(blas, stream) == CUBLAS_STATUS_SUCCESS);
        CHECK(cublasDestroy(blas) == CUBLAS_STATUS_SUCCESS);
    });
    const double solver_us = median_us(repeats, [&] {
        cusolverDnHandle_t solver = nullptr;
        CHECK(cusolverDnCreate(&solver) == CUSOLVER_STATUS_SUCCESS);
        CHECK(cusolverDnSetStream(solver, stream) == CUSOLVER_STATUS_SUCCESS);
        CHECK(cusolverDnDestroy(solver) == CUSOLVER_STATUS_SUCCESS);
    });
    std::vector<void*> pointers(sizes.size());
    const double malloc_us = median_us(repeats, [&] {
        for (std::size_t i = 0; i < sizes.size(); ++i) CHECK(cudaMalloc(&pointers[i], sizes[i]) == cudaSuccess);
    });
    // The frees: the median of an allocate-and-free round minus the median
    // allocation round above (whose arrays each repeat left allocated).
    const double free_us = median_us(repeats, [&] {
        for (std::size_t i = 0; i < sizes.size(); ++i) CHECK(cudaMalloc(&pointers[i], sizes[i]) == cudaSuccess);
        for (void* pointer : pointers) CHECK(cudaFree(pointer) == cudaSuccess);
    }) - malloc_us;
    void* scratch = nullptr;
    CHECK(cudaMalloc(&scratch, 8 * d * d) == cudaSuccess);
    const double memset_sync_us = median_us(repeats, [&] {
        CHECK(cudaMemsetAsync(scratch, 0, 8 * d, stream) == cudaSuccess);
        CHECK(cudaMemsetAsync(scratch, 0, 8 * d * d, stream) == cudaSuccess);
        CHECK(cudaStreamSynchronize(stream) == cudaSuccess);
    });
    std::printf("{\"repeats\": %d, \"arrays\": %zu, \"stream_create_destroy_us\": %.2f, "
                "\"cublas_create_destroy_us\": %.2f, \"cusolver_create_destroy_us\": %.2f, "
                "\"cuda_malloc_all_us\": %.2f, \"cuda_free_all_us\": %.2f, \"memset_sync_us\": %.2f}\n",
                repeats, sizes.size(), stream_us, blas_us, solver_us, malloc_us, free_us, memset_sync_us);
    return 0;
}

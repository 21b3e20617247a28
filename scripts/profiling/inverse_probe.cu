// The pipeline's inverse of H with cuSOLVER by two routes (issue 28: at
// wide's d = 257 potrf and potrs with d right-hand sides were two thirds of
// an update's GPU time; the contract's rcond needs H^-1's 1-norm, so the
// inverse itself is needed). Per d and dtype, on one stream, each way timed
// by events over repeated calls:
//   potrf           the factorization alone (H copied into the factor first)
//   potrf_potrs     + the identity and potrs with d right-hand sides (the
//                   route before potri_inverse, 2026-12-06)
//   potrf_potri     + potri: the inverse from the factor in place (one
//                   triangle; LinearSolver::cholesky_step's route since)
// and the largest difference between the two inverses' upper triangles
// relative to the largest entry (a check that both computed the same
// matrix). potrf and potri are the engine's own calls (vendor_calls.cuh).
//
//   nvcc -O3 -std=c++17 -arch=sm_90 -I native/cuda/src -I native -o inverse_probe scripts/profiling/inverse_probe.cu \
//     native/cuda/src/engine_internal.cu -lcusolver -lcublas
//   ./inverse_probe [repeats, default 40]
//
// Prints one JSON object.
#include <cuda_runtime.h>
#include <cusolverDn.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <vector>

#include "vendor_calls.cuh"

#define CHECK(call)                                                                                    \
    do {                                                                                               \
        const auto status_ = (call);                                                                   \
        if (static_cast<int>(status_) != 0) {                                                          \
            std::fprintf(stderr, "%s failed (%d) at line %d\n", #call, static_cast<int>(status_), __LINE__); \
            std::exit(1);                                                                              \
        }                                                                                              \
    } while (0)

namespace {

namespace vendor = rh::cuda::vendor;

template <class T>
__global__ void identity(int d, T* out) {
    for (int e = blockIdx.x * blockDim.x + threadIdx.x; e < d * d; e += gridDim.x * blockDim.x)
        out[e] = (e % d == e / d) ? T(1) : T(0);
}

// The route the engine no longer takes (its potrf and potri are vendor_calls.cuh's own).
void cholesky_solve(cusolverDnHandle_t h, int d, const double* A, double* B, int* info) {
    CHECK(cusolverDnDpotrs(h, CUBLAS_FILL_MODE_UPPER, d, d, A, d, B, d, info));
}
void cholesky_solve(cusolverDnHandle_t h, int d, const float* A, float* B, int* info) {
    CHECK(cusolverDnSpotrs(h, CUBLAS_FILL_MODE_UPPER, d, d, A, d, B, d, info));
}

const char* dtype_name(double) { return "float64"; }
const char* dtype_name(float) { return "float32"; }

template <class T>
void probe(cusolverDnHandle_t h, cudaStream_t stream, int d, int repeats, bool& first) {
    std::mt19937_64 rng(d);
    std::normal_distribution<double> normal;
    std::vector<double> B(static_cast<std::size_t>(d) * d);
    for (auto& b : B) b = normal(rng);
    std::vector<T> H(static_cast<std::size_t>(d) * d);  // B B' / d + I: symmetric positive definite
    for (int i = 0; i < d; ++i)
        for (int j = 0; j < d; ++j) {
            double sum = i == j ? 1.0 : 0.0;
            for (int k = 0; k < d; ++k) sum += B[i + k * d] * B[j + k * d] / d;
            H[i + j * d] = static_cast<T>(sum);
        }
    const std::size_t bytes = sizeof(T) * d * d;
    T *source, *factor, *inverse, *work;
    int* info;
    CHECK(cudaMalloc(&source, bytes));
    CHECK(cudaMalloc(&factor, bytes));
    CHECK(cudaMalloc(&inverse, bytes));
    CHECK(cudaMalloc(&info, 2 * sizeof(int)));
    CHECK(cudaMemcpy(source, H.data(), bytes, cudaMemcpyHostToDevice));
    const int lwork = std::max(vendor::cholesky_workspace(h, d, factor), vendor::cholesky_inverse_workspace(h, d, factor));
    CHECK(cudaMalloc(&work, sizeof(T) * std::max(lwork, 1)));
    auto potrf = [&] {
        CHECK(cudaMemcpyAsync(factor, source, bytes, cudaMemcpyDeviceToDevice, stream));
        vendor::cholesky(h, d, factor, work, lwork, info);
    };
    auto potrs = [&] {
        potrf();
        identity<T><<<(d * d + 255) / 256, 256, 0, stream>>>(d, inverse);
        cholesky_solve(h, d, factor, inverse, info + 1);
    };
    auto potri = [&] {
        potrf();
        vendor::cholesky_inverse(h, d, factor, work, lwork, info + 1);
    };
    cudaEvent_t start, stop;
    CHECK(cudaEventCreate(&start));
    CHECK(cudaEventCreate(&stop));
    auto time = [&](auto&& way) {
        for (int w = 0; w < 3; ++w) way();  // warm-up
        std::vector<double> rounds;
        for (int round = 0; round < 5; ++round) {
            CHECK(cudaEventRecord(start, stream));
            for (int r = 0; r < repeats; ++r) way();
            CHECK(cudaEventRecord(stop, stream));
            CHECK(cudaEventSynchronize(stop));
            float ms = 0.0f;
            CHECK(cudaEventElapsedTime(&ms, start, stop));
            rounds.push_back(1e3 * ms / repeats);
        }
        std::sort(rounds.begin(), rounds.end());
        return rounds[rounds.size() / 2];
    };
    const double t_potrf = time(potrf), t_potrs = time(potrs), t_potri = time(potri);
    // The two inverses' upper triangles.
    std::vector<T> by_potrs(static_cast<std::size_t>(d) * d), by_potri(static_cast<std::size_t>(d) * d);
    potrs();
    CHECK(cudaMemcpy(by_potrs.data(), inverse, bytes, cudaMemcpyDeviceToHost));
    potri();
    CHECK(cudaMemcpy(by_potri.data(), factor, bytes, cudaMemcpyDeviceToHost));
    int infos[2];
    CHECK(cudaMemcpy(infos, info, sizeof(infos), cudaMemcpyDeviceToHost));
    double largest = 0.0, difference = 0.0;
    for (int j = 0; j < d; ++j)
        for (int i = 0; i <= j; ++i) {
            largest = std::max(largest, std::fabs(static_cast<double>(by_potrs[i + j * d])));
            difference = std::max(difference, std::fabs(static_cast<double>(by_potrs[i + j * d]) -
                                                        static_cast<double>(by_potri[i + j * d])));
        }
    std::printf("%s\n  {\"d\": %d, \"dtype\": \"%s\", \"repeats\": %d, \"us_per_call\": {\"potrf\": %.2f, "
                "\"potrf_potrs\": %.2f, \"potrf_potri\": %.2f}, \"inverse_difference_relative\": %.3g, "
                "\"info\": [%d, %d]}",
                first ? "" : ",", d, dtype_name(T{}), repeats, t_potrf, t_potrs, t_potri, difference / largest, infos[0],
                infos[1]);
    first = false;
    CHECK(cudaFree(source));
    CHECK(cudaFree(factor));
    CHECK(cudaFree(inverse));
    CHECK(cudaFree(work));
    CHECK(cudaFree(info));
    CHECK(cudaEventDestroy(start));
    CHECK(cudaEventDestroy(stop));
}

}  // namespace

int main(int argc, char** argv) {
    const int repeats = argc > 1 ? std::atoi(argv[1]) : 40;
    cudaStream_t stream;
    CHECK(cudaStreamCreate(&stream));
    cusolverDnHandle_t handle;
    CHECK(cusolverDnCreate(&handle));
    CHECK(cusolverDnSetStream(handle, stream));
    cudaDeviceProp properties{};
    CHECK(cudaGetDeviceProperties(&properties, 0));
    std::printf("{\"device\": \"%s\", \"cases\": [", properties.name);
    bool first = true;
    for (int d : {65, 91, 129, 257}) {
        probe<double>(handle, stream, d, repeats, first);
        probe<float>(handle, stream, d, repeats, first);
    }
    std::printf("\n]}\n");
    CHECK(cusolverDnDestroy(handle));
    CHECK(cudaStreamDestroy(stream));
    return 0;
}

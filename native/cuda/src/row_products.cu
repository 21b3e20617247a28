#include "row_products.cuh"

#include <string>
#include <type_traits>

#include "core/huber.hpp"
#include "engine_internal.cuh"
#include "launch.cuh"

namespace rh::cuda {

namespace {

// A warp takes chunks of 4 rows (over_row_chunks); lane l holds row l % 4
// of its chunk and columns l / 4, l / 4 + 8, ... (NB of them: p <= 8 NB),
// so a warp's loads of a column block are 4 rows x 8 columns. The next
// chunk's loads are issued before this chunk's arithmetic.
inline constexpr int kChunkRows = 4;
inline constexpr int kLanesPerRow = 8;
inline constexpr int kStepSlots = (kLineSearchSteps + kLanesPerRow - 1) / kLanesPerRow;
static_assert(kLineSearchSteps <= 31, "t = 2^-k is formed as 1 / (1 << k)");
static_assert(kLammTrialsPerPass <= kLanesPerRow, "a lane of a row scores each trial");

// A lane's values of one chunk: its columns of its row (zero past p and past
// n), the row's value (its residual, or y) and weight.
template <class T, int NB>
struct RowChunk {
    T x[NB];
    T value, w;
    bool in;

    __device__ void load(std::int64_t n, std::int64_t p, const T* X, const T* values, const T* weight,
                         std::int64_t row, int column) {
        in = row < n;
#pragma unroll
        for (int I = 0; I < NB; ++I) {
            const std::int64_t j = I * kLanesPerRow + column;
            x[I] = in && j < p ? X[row * p + j] : T(0);
        }
        value = in ? values[row] : T(0);
        w = in ? weight[row] : T(0);
    }
};

// A vector's entries at a lane's columns (zero past p).
template <class T, int NB>
__device__ void load_columns(std::int64_t p, const T* v, int column, T (&out)[NB]) {
#pragma unroll
    for (int I = 0; I < NB; ++I) {
        const std::int64_t j = I * kLanesPerRow + column;
        out[I] = j < p ? v[j] : T(0);
    }
}

// The row's product x' v: each lane's columns (FMAs in column order), then
// a butterfly over the row's eight lanes (l, l ^ 4, l ^ 8, ...). Each
// addition's two operands are the same on both lanes, so all eight get the
// same bits. Every lane of the warp must call it.
template <class T, int NB>
__device__ T row_product(const T (&x)[NB], const T (&v)[NB]) {
    T part = T(0);
#pragma unroll
    for (int I = 0; I < NB; ++I) part = fma(x[I], v[I], part);
    part += __shfl_xor_sync(0xffffffffu, part, 4);
    part += __shfl_xor_sync(0xffffffffu, part, 8);
    part += __shfl_xor_sync(0xffffffffu, part, 16);
    return part;
}

// This lane's column in its row's lanes (its columns: column, column + 8, ...).
__device__ inline int lane_column() { return (static_cast<int>(threadIdx.x) & 31) / kChunkRows; }

// body(rows, row) for each of this warp's chunks (rows: this lane's values
// of the chunk, row: its row), the next chunk's loads issued before body
// runs on this one. A warp's lanes make the same calls, so body may shuffle.
template <class T, int NB, class Body>
__device__ void over_row_chunks(std::int64_t n, std::int64_t p, const T* X, const T* values, const T* w,
                                Body&& body) {
    const int lane = static_cast<int>(threadIdx.x) & 31, warp = static_cast<int>(threadIdx.x) >> 5;
    const int column = lane / kChunkRows, row_in_chunk = lane % kChunkRows;
    const std::int64_t chunks = (n + kChunkRows - 1) / kChunkRows;
    const std::int64_t first = static_cast<std::int64_t>(blockIdx.x) * kWarps + warp;
    const std::int64_t stride = static_cast<std::int64_t>(gridDim.x) * kWarps;
    RowChunk<T, NB> next;
    if (first < chunks) next.load(n, p, X, values, w, first * kChunkRows + row_in_chunk, column);
    for (std::int64_t q = first; q < chunks; q += stride) {
        const RowChunk<T, NB> rows = next;
        if (q + stride < chunks) next.load(n, p, X, values, w, (q + stride) * kChunkRows + row_in_chunk, column);
        body(rows, q * kChunkRows + row_in_chunk);
    }
}

template <class T, int NB>
__global__ void __launch_bounds__(kThreads) step_line_search_kernel(std::int64_t n, std::int64_t p, const T* X,
                                                                    const T* step, const T* b, const T* r,
                                                                    const T* w, T tau, T* dz, double* partials,
                                                                    const BatchConstants<T>* constants) {
    read_row_inputs(constants, X, w, tau);
    const int column = lane_column();
    const T intercept = b != nullptr ? *b : T(0);
    const T half_tau_squared = (T(0.5) * tau) * tau;
    T step_part[NB];
    load_columns<T, NB>(p, step, column, step_part);
    // This lane's halvings k = column + 8 j: t = 2^-k, exact in both dtypes.
    T t_of[kStepSlots];
    double own[kStepSlots] = {};
#pragma unroll
    for (int j = 0; j < kStepSlots; ++j) {
        const int k = column + j * kLanesPerRow;
        t_of[j] = k < kLineSearchSteps ? static_cast<T>(1.0 / static_cast<double>(1 << k)) : T(0);
    }
    over_row_chunks<T, NB>(n, p, X, r, w, [&](const RowChunk<T, NB>& rows, std::int64_t row) {
        const T product = row_product<T, NB>(rows.x, step_part);
        if (!rows.in) return;
        const T dzi = product + intercept;
        if (column == 0) dz[row] = dzi;
#pragma unroll
        for (int j = 0; j < kStepSlots; ++j) {
            if (column + j * kLanesPerRow >= kLineSearchSteps) break;
            const T rk = fma(t_of[j], dzi, rows.value);
            own[j] += static_cast<double>(rows.w * core::huber_loss_fast(rk, tau, half_tau_squared));
        }
    });
    double losses[kLineSearchSteps];
#pragma unroll
    for (int k = 0; k < kLineSearchSteps; ++k) losses[k] = k % kLanesPerRow == column ? own[k / kLanesPerRow] : 0.0;
    store_block_sums<kLineSearchSteps>(losses, partials);
}

// launch_start_rows: r = y - (x' point + b) by the row's lanes
// (row_product), written and scored by lane 0 of the row as
// start_residual_kernel does; with check_partials, the batch's non-finite
// entries of X (each lane its columns) and y counted in the same read.
template <class T, int NB>
__global__ void __launch_bounds__(kThreads) start_rows_kernel(std::int64_t n, std::int64_t p, const T* X,
                                                              const T* point, const T* b, const T* y, const T* w,
                                                              T tau, T* r, double* partials,
                                                              double* check_partials) {
    const int column = lane_column();
    const T intercept = b != nullptr ? *b : T(0);
    const T half_tau_squared = (T(0.5) * tau) * tau;
    const bool checking = check_partials != nullptr;
    T point_part[NB];
    load_columns<T, NB>(p, point, column, point_part);
    double loss[1] = {0.0};
    double counts[kBatchCheckSums] = {};
    over_row_chunks<T, NB>(n, p, X, y, w, [&](const RowChunk<T, NB>& rows, std::int64_t row) {
        const T product = row_product<T, NB>(rows.x, point_part);
        if (checking) {
#pragma unroll
            for (int I = 0; I < NB; ++I) counts[kNonFiniteX] += isfinite(rows.x[I]) ? 0.0 : 1.0;
        }
        if (!rows.in || column != 0) return;
        const T ri = rows.value - (product + intercept);
        r[row] = ri;
        loss[0] += static_cast<double>(rows.w * core::huber_loss_fast(ri, tau, half_tau_squared));
        if (checking) counts[kNonFiniteY] += isfinite(rows.value) ? 0.0 : 1.0;
    });
    store_block_sums<1>(loss, partials);
    if (checking) store_block_sums<kBatchCheckSums>(counts, check_partials);
}

// launch_lamm_trial_rows: the trials' products x' Delta_k by every lane of a
// row (row_product, one per trial), then lane k of the row (column k) forms
// trial k's residual as lamm_trials_kernel does, writes it and adds its loss.
template <class T, int NB>
__global__ void __launch_bounds__(kThreads) lamm_trial_rows_kernel(std::int64_t n, std::int64_t p, const T* X,
                                                                   const T* changes, const T* b, const T* r,
                                                                   const T* w, T tau, T* trial_residuals,
                                                                   double* partials) {
    constexpr int K = kLammTrialsPerPass;
    const int column = lane_column();
    const T half_tau_squared = (T(0.5) * tau) * tau;
    T change_part[K][NB];
#pragma unroll
    for (int k = 0; k < K; ++k) load_columns<T, NB>(p, changes + k * p, column, change_part[k]);
    const T intercept_change = column < K && b != nullptr ? b[column] : T(0);
    double own = 0.0;
    over_row_chunks<T, NB>(n, p, X, r, w, [&](const RowChunk<T, NB>& rows, std::int64_t row) {
        T mine = T(0);
#pragma unroll
        for (int k = 0; k < K; ++k) {
            const T product = row_product<T, NB>(rows.x, change_part[k]);
            if (k == column) mine = product;
        }
        if (!rows.in || column >= K) return;
        const T rk = rows.value - (mine + intercept_change);
        trial_residuals[row + column * n] = rk;
        own += static_cast<double>(rows.w * core::huber_loss_fast(rk, tau, half_tau_squared));
    });
    double losses[K];
#pragma unroll
    for (int k = 0; k < K; ++k) losses[k] = k == column ? own : 0.0;
    store_block_sums<K>(losses, partials);
}

// Calls launch(nb) with nb = std::integral_constant<int, NB>, NB = ceil(p / 8)
// (1 for p = 0); p past kRowProductColumns is refused in `name`'s words.
template <class Launch>
void with_column_blocks(std::int64_t p, const char* name, Launch&& launch) {
    if (p < 0 || p > kRowProductColumns)
        throw Failure(core::Status::internal_error, std::string(name) + ": p must be 0 to 64 (kRowProductColumns)");
    switch ((p + kLanesPerRow - 1) / kLanesPerRow) {
        case 0:
        case 1: launch(std::integral_constant<int, 1>{}); break;
        case 2: launch(std::integral_constant<int, 2>{}); break;
        case 3: launch(std::integral_constant<int, 3>{}); break;
        case 4: launch(std::integral_constant<int, 4>{}); break;
        case 5: launch(std::integral_constant<int, 5>{}); break;
        case 6: launch(std::integral_constant<int, 6>{}); break;
        case 7: launch(std::integral_constant<int, 7>{}); break;
        default: launch(std::integral_constant<int, 8>{}); break;
    }
}

}  // namespace

template <class T>
void launch_step_line_search(cudaStream_t stream, std::int64_t n, std::int64_t p, const T* X, const T* step,
                             const T* b, const T* r, const T* w, T tau, T* dz, double* partials,
                             const BatchConstants<T>* constants) {
    with_column_blocks(p, "launch_step_line_search", [&](auto nb) {
        step_line_search_kernel<T, decltype(nb)::value>
            <<<row_blocks(n), kThreads, 0, stream>>>(n, p, X, step, b, r, w, tau, dz, partials, constants);
    });
    RH_CUDA_LAUNCHED();
}

template <class T>
void launch_start_rows(cudaStream_t stream, std::int64_t n, std::int64_t p, const T* X, const T* point, const T* b,
                       const T* y, const T* w, T tau, T* r, double* partials, double* check_partials) {
    with_column_blocks(p, "launch_start_rows", [&](auto nb) {
        start_rows_kernel<T, decltype(nb)::value>
            <<<row_blocks(n), kThreads, 0, stream>>>(n, p, X, point, b, y, w, tau, r, partials, check_partials);
    });
    RH_CUDA_LAUNCHED();
}

template <class T>
void launch_lamm_trial_rows(cudaStream_t stream, std::int64_t n, std::int64_t p, const T* X, const T* changes,
                            const T* b, const T* r, const T* w, T tau, T* trial_residuals, double* partials) {
    with_column_blocks(p, "launch_lamm_trial_rows", [&](auto nb) {
        lamm_trial_rows_kernel<T, decltype(nb)::value>
            <<<row_blocks(n), kThreads, 0, stream>>>(n, p, X, changes, b, r, w, tau, trial_residuals, partials);
    });
    RH_CUDA_LAUNCHED();
}

#define RH_INSTANTIATE(T)                                                                                         \
    template void launch_start_rows<T>(cudaStream_t, std::int64_t, std::int64_t, const T*, const T*, const T*,  \
                                       const T*, const T*, T, T*, double*, double*);                              \
    template void launch_step_line_search<T>(cudaStream_t, std::int64_t, std::int64_t, const T*, const T*,      \
                                             const T*, const T*, const T*, T, T*, double*,                        \
                                             const BatchConstants<T>*);                                           \
    template void launch_lamm_trial_rows<T>(cudaStream_t, std::int64_t, std::int64_t, const T*, const T*,       \
                                            const T*, const T*, const T*, T, T*, double*);
RH_INSTANTIATE(float)
RH_INSTANTIATE(double)
#undef RH_INSTANTIATE

}  // namespace rh::cuda

#include "cpu/fast/fast_buffers.hpp"

#include <algorithm>

#include "cpu/kernels/local_model_kernels.hpp"
#include "cpu/kernels/narrow_gram.hpp"
#include "cpu/kernels/narrow_passes.hpp"

namespace rh::cpu::fast {

template <class T>
void FastBuffers<T>::reserve(BufferGrowth& growth, std::int64_t rows, std::int64_t d, int threads) {
    threads = std::max(threads, 1);
    growth.grow(gathered_rows, rows * d);
    for (auto* buffer : {&residual, &candidate_residual, &pair_residual, &design_step, &weighted_score, &curvature,
                         &gram_curvature})
        growth.grow(*buffer, rows);
    growth.grow(pair_change, 2 * d);
    for (auto* buffer : {&shift, &scratch}) growth.grow(*buffer, d);
    for (auto* buffer : {&gram, &newton_matrix, &majorizer}) growth.grow(*buffer, d * d);
    if (threads > 1) {
        growth.grow(partial_products, (threads - 1) * d);
        growth.grow(partial_grams, (threads - 1) * d * d);
    }
    growth.grow(trial_products, threads * d);
    // The narrow Gram's scratch only where the kernel runs (it grows as d^2 per thread).
    if (d - 1 <= narrow_gram_max_features<T>) growth.grow(gram_scratch, threads * narrow_gram_scratch_size(d));
}

template <class T>
void FastBuffers<T>::reserve_panels(BufferGrowth& growth, std::int64_t rows, std::int64_t features) {
    growth.grow(narrow_panels, narrow_panel_size<T>(rows, features));
}

template <class T>
void FastBuffers<T>::reserve_local_model(BufferGrowth& growth, std::int64_t rows, std::int64_t d) {
    const std::int64_t stride = local_column_stride(local_uncertain_limit(rows));
    growth.grow(row_norms, rows);
    growth.grow(anchor_residual, rows);
    growth.grow(local_columns, local_padded_columns(d) * stride);
    growth.grow(local_residual, stride);
    growth.grow(local_weight, stride);
    growth.grow(local_index, rows);
    growth.grow(anchor_theta, d);
    growth.grow(local_change, d);
    for (auto* buffer : {&local_delta, &local_scores, &local_total}) growth.grow(*buffer, d);
    growth.grow(local_gram, d * d);
}

template <class T>
void FastBuffers<T>::reserve_meat(BufferGrowth& growth, std::int64_t rows, std::int64_t d) {
    growth.grow(meat_weights, rows);
    growth.grow(meat_gram, d * d);
}

template struct FastBuffers<float>;
template struct FastBuffers<double>;

}  // namespace rh::cpu::fast

#include "cpu/workspace.hpp"

#include <algorithm>

#include "cpu/local_model_kernels.hpp"
#include "cpu/narrow_gram.hpp"
#include "cpu/narrow_passes.hpp"

namespace rh::cpu {

template <class T>
void Workspace<T>::reserve(std::int64_t rows, std::int64_t d, bool needs_design_copy, bool needs_unit_weights,
                           int threads) {
    if (needs_design_copy) grow(design, rows * d);
    if (needs_unit_weights && static_cast<std::int64_t>(unit_weights.size()) < rows) {
        grow(unit_weights, rows);
        std::fill(unit_weights.begin(), unit_weights.end(), T(1));
    }
    grow(weighted_design, rows * d);
    for (auto* buffer : {&residual, &candidate_residual, &pair_residual, &design_step, &weighted_score, &curvature,
                         &gram_curvature})
        grow(*buffer, rows);
    grow(pair_change, 2 * d);
    for (auto* buffer : {&theta, &candidate, &step, &gradient, &shift, &scratch, &history_direction, &penalty_mask})
        grow(*buffer, d);
    for (auto* buffer : {&newton_matrix, &gram, &factor, &newton_matrix_full, &factor_inverse}) grow(*buffer, d * d);
    grow(pivots, d);
    if (threads > 1) {
        grow(partial_products, (threads - 1) * d);
        grow(partial_grams, (threads - 1) * d * d);
    }
    grow(trial_products, std::max(threads, 1) * d);
    // The narrow Gram's scratch only where the kernel runs (it grows as d^2 per thread).
    if (d - 1 <= fast::narrow_gram_max_features<T>)
        grow(gram_scratch, std::max(threads, 1) * fast::narrow_gram_scratch_size(d));
    grow(condition_work, 4 * d);
    grow(condition_iwork, d);
    if (least_squares_size_ < d) {
        const auto sizes = blas::least_squares_workspace(static_cast<blas::index_t>(d), T{});
        grow(least_squares_work, sizes.work);
        grow(least_squares_iwork, sizes.iwork);
        grow(singular_values, sizes.singular_values);
        least_squares_size_ = d;
    }
}

template <class T>
void Workspace<T>::reserve_panels(std::int64_t rows, std::int64_t features) {
    grow(narrow_panels, fast::narrow_panel_size<T>(rows, features));
}

template <class T>
void Workspace<T>::reserve_local_model(std::int64_t rows, std::int64_t d) {
    const std::int64_t stride = fast::local_column_stride(fast::local_uncertain_limit(rows));
    grow(row_norms, rows);
    grow(anchor_residual, rows);
    grow(local_columns, fast::local_padded_columns(d) * stride);
    grow(local_residual, stride);
    grow(local_weight, stride);
    grow(local_index, rows);
    grow(anchor_theta, d);
    grow(local_change, d);
    for (auto* buffer : {&local_delta, &local_scores, &local_total}) grow(*buffer, d);
    grow(local_gram, d * d);
}

template class Workspace<float>;
template class Workspace<double>;

}  // namespace rh::cpu

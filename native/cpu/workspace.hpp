// Buffers the engine reuses across Newton/LAMM iterations and batches.
// They grow only when a larger batch (or parameter count) arrives; every
// growth is counted so tests can prove that steady-state updates allocate
// nothing.
#pragma once

#include <cstdint>
#include <vector>

#include "cpu/blas_provider.hpp"
#include "cpu/staggered_allocator.hpp"

namespace rh::cpu {

template <class T>
class Workspace {
public:
    // Row-sized buffers (n) and design-sized buffers (n x d), staggered
    // (staggered_allocator.hpp).
    StaggeredVector<T> design;            // Z = [X, 1] when fitting an intercept
    StaggeredVector<T> weighted_design;   // Z * (w kappa(r)), row-scaled design for the Gram
    StaggeredVector<T> unit_weights;      // all ones when sample_weight is absent
    StaggeredVector<T> residual;          // r = y - Z theta
    StaggeredVector<T> candidate_residual;
    // Fast LAMM: the second trial of a pair (its residual, n; its change and
    // candidate, 2 d).
    StaggeredVector<T> pair_residual;
    std::vector<T> pair_change;
    StaggeredVector<T> design_step;       // Z step, for O(n) backtracking
    StaggeredVector<T> weighted_score;    // w * score(r)
    // Fast path: w * kappa(r) at the current residual, and the weights the
    // Gram in `gram` currently represents (its incremental updates add
    // only the rows where the two differ). `weighted_design` doubles as the
    // gather buffer of those updates.
    StaggeredVector<T> curvature, gram_curvature;
    // Parameter-sized buffers (d) and matrices (d x d).
    std::vector<T> theta, candidate, step, gradient, shift, scratch, history_direction, penalty_mask;
    std::vector<T> newton_matrix, gram, factor, newton_matrix_full, factor_inverse;
    // Fast path, per extra thread: a partial X' s (d) and a partial Gram (d x d).
    std::vector<T> partial_products, partial_grams;
    // Fast LAMM, per thread: X' (w score(r_trial)) of the last majorization
    // trial (threads x p), so that an accepted trial's gradient costs no pass.
    std::vector<T> trial_products;
    // Fast path, narrow rows: column panels of the batch (narrow_passes.hpp).
    StaggeredVector<T> narrow_panels;
    // Fast LAMM's local Huber model (local_huber_model.hpp), narrow rows:
    // ||z_i|| and the anchor's residual (n each); the uncertain rows'
    // columns, residuals and weights (local_model_kernels.hpp's layout) and
    // a row index (n); the anchor and a change from it (d); in double, the
    // step from it, the certain rows' scores, a scores total (d) and their
    // Gram (d x d).
    StaggeredVector<T> row_norms, anchor_residual, local_columns, local_residual, local_weight;
    std::vector<std::int64_t> local_index;
    std::vector<T> anchor_theta, local_change;
    std::vector<double> local_delta, local_scores, local_total, local_gram;
    // Fast path: the narrow Gram kernel's scratch, one per thread (narrow_gram.hpp).
    std::vector<T> gram_scratch;
    std::vector<blas::index_t> pivots, least_squares_iwork;
    std::vector<T> singular_values, least_squares_work;
    std::vector<T> condition_work;                 // 4d, for the rcond estimates
    std::vector<blas::index_t> condition_iwork;    // d

    void reserve(std::int64_t rows, std::int64_t parameters, bool needs_design_copy, bool needs_unit_weights,
                 int threads = 1);

    // Room for the narrow passes' panels of rows x features.
    void reserve_panels(std::int64_t rows, std::int64_t features);

    // Room for fast LAMM's local Huber model (narrow rows, penalty l1).
    void reserve_local_model(std::int64_t rows, std::int64_t parameters);

    std::int64_t allocation_events() const noexcept { return allocation_events_; }

private:
    template <class V>
    void grow(V& buffer, std::int64_t size) {
        if (static_cast<std::int64_t>(buffer.size()) >= size) return;
        buffer.resize(static_cast<std::size_t>(size));
        ++allocation_events_;
    }
    std::int64_t least_squares_size_ = -1;
    std::int64_t allocation_events_ = 0;
};

extern template class Workspace<float>;
extern template class Workspace<double>;

}  // namespace rh::cpu

// The buffers of the fast path (cpu/fast/), owned by the engine and reused
// across iterations and batches: grown only when a larger batch arrives
// (every growth counted by the engine's BufferGrowth).
#pragma once

#include <cstdint>
#include <vector>

#include "cpu/buffer_growth.hpp"
#include "cpu/platform/staggered_allocator.hpp"

namespace rh::cpu::fast {

template <class T>
struct FastBuffers {
    // Row-sized (n), staggered (staggered_allocator.hpp).
    StaggeredVector<T> residual;            // r = y - Z theta at the current point
    StaggeredVector<T> candidate_residual;  // a trial's residual
    StaggeredVector<T> pair_residual;       // LAMM: the second trial of a pair
    StaggeredVector<T> design_step;         // Z step (Newton), Z change (a LAMM trial's blocks)
    StaggeredVector<T> weighted_score;      // s = w score(r)
    // w kappa(r) at the current residual, and the weights the Gram in
    // `gram` currently represents (its incremental updates add only the rows
    // where the two differ).
    StaggeredVector<T> curvature, gram_curvature;
    StaggeredVector<T> gathered_rows;       // n x d: weighted rows gathered for a SYRK
    StaggeredVector<T> meat_weights;        // w score(r_hat)^2 (amendment 0003; when the meat is tracked)
    StaggeredVector<T> narrow_panels;       // column panels of X (narrow rows)
    // Parameter-sized (d) and matrices (d x d).
    std::vector<T> pair_change;             // 2 d: the pair's second change and candidate
    std::vector<T> shift, scratch;          // D = theta - theta_prev and J D
    std::vector<T> gram, newton_matrix;     // upper triangles
    std::vector<T> majorizer;               // upper triangle of M (amendment 0002)
    std::vector<T> meat_gram;               // the batch's meat term (amendment 0003)
    // Per thread: X' s of a pass's part (threads x p), the partial sums of a
    // split X' s and of a split Gram (per extra thread), and the narrow Gram
    // kernel's scratch.
    std::vector<T> trial_products, partial_products, partial_grams, gram_scratch;

    // LAMM's local Huber model (local_huber_model.hpp), narrow rows: ||z_i||
    // and the anchor's residual (n each); the uncertain rows' columns,
    // residuals and weights and a row index (n); the anchor and a change
    // from it (d); in double, the step from it, the certain rows' scores, a
    // scores total (d) and their Gram (d x d).
    StaggeredVector<T> row_norms, anchor_residual, local_columns, local_residual, local_weight;
    std::vector<std::int64_t> local_index;
    std::vector<T> anchor_theta, local_change;
    std::vector<double> local_delta, local_scores, local_total, local_gram;

    void reserve(BufferGrowth& growth, std::int64_t rows, std::int64_t d, int threads);
    // The narrow passes' panels of rows x features.
    void reserve_panels(BufferGrowth& growth, std::int64_t rows, std::int64_t features);
    // LAMM's local Huber model (narrow rows, penalty l1).
    void reserve_local_model(BufferGrowth& growth, std::int64_t rows, std::int64_t d);
    // The meat's weights and Gram (when the state tracks the meat).
    void reserve_meat(BufferGrowth& growth, std::int64_t rows, std::int64_t d);
};

extern template struct FastBuffers<float>;
extern template struct FastBuffers<double>;

}  // namespace rh::cpu::fast

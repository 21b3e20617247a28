// The fast path's weighted Gram Z' diag(c) Z (upper triangle, row-major, in
// ws.gram), kept in step with the weights it represents (ws.gram_curvature):
// computed in full once, then updated incrementally, re-adding only the rows
// whose weight changed (sqrt(|delta|)-scaled rows, alpha = +1 / -1). A full
// recompute happens when the Gram is not valid yet, when the changed rows
// are many (more than a quarter of the batch or half of the weighted rows),
// or after kMaxIncrementalUpdates incremental updates in a row (bounds the
// drift). Narrow designs use the register-tiled kernel (narrow_gram.hpp),
// wider ones gather + SYRK block by block (a block stays in cache between
// its gather and its SYRK).
#pragma once

#include <algorithm>
#include <cstdint>
#include <utility>

#include "cpu/cpu_diagnostics.hpp"
#include "cpu/fast/problem.hpp"
#include "cpu/kernels/fast_kernels.hpp"
#include "cpu/kernels/narrow_gram.hpp"
#include "cpu/platform/blas_provider.hpp"

namespace rh::cpu::fast {

// Bytes of gathered weighted rows per block of a full recompute.
inline constexpr std::int64_t kGramBlockBytes = std::int64_t{256} << 10;
// Incremental updates allowed between two full recomputes.
inline constexpr int kMaxIncrementalUpdates = 32;

template <class T>
class GramCache {
public:
    GramCache(const Problem<T>& problem, Context<T>& context) : P_(problem), C_(context) {}

    // Brings the Gram to the weights ws.curvature (whose change count
    // against ws.gram_curvature and number of positive entries the caller's
    // scoring pass measured), then makes them the Gram's weights.
    void refresh(const ScoreSums& sums, GramCounters& counters) {
        FastBuffers<T>& ws = C_.ws;
        const std::int64_t n = P_.rows;
        const bool full = !valid_ || sums.changed * 4 > n || sums.changed * 2 > sums.weighted_rows ||
                          incremental_in_a_row_ >= kMaxIncrementalUpdates;
        if (full && sums.weighted_rows * 2 < n) {
            // Few rows weighted (a first batch's start from zero: ~23% at
            // 4,096 x 16): the Gram from zero by the changed-rows path, which
            // gathers and accumulates only the rows with c > 0.
            std::fill(ws.gram_curvature.begin(), ws.gram_curvature.begin() + n, T(0));
            zero_upper(ws.gram.data());
            add_changes(ws.curvature.data(), ws.gram_curvature.data());
            ++counters.full_updates;
            incremental_in_a_row_ = 0;
            valid_ = true;
        } else if (full) {
            recompute(ws.curvature.data());
            ++counters.full_updates;
            incremental_in_a_row_ = 0;
            valid_ = true;
        } else if (sums.changed > 0) {
            add_changes(ws.curvature.data(), ws.gram_curvature.data());
            ++counters.incremental_updates;
            counters.changed_rows += sums.changed;
            ++incremental_in_a_row_;
        }
        std::swap(ws.curvature, ws.gram_curvature);
    }

    bool valid() const noexcept { return valid_; }

    // Full recompute: every row with c > 0, scaled by sqrt(c). Part k
    // accumulates its rows into its own Gram (part 0's is ws.gram); the
    // parts' upper triangles are added in part order.
    void recompute(const T* c) { weighted_gram_into(c, C_.ws.gram.data()); }

    // The upper triangle of Z' diag(c) Z into `target` (d x d), computed as
    // a full recompute is, without touching the cached Gram or its weights
    // (the majorizer's Gram, amendment 0002). Uses the shared scratch
    // (gathered rows, the other parts' Grams).
    void weighted_gram_into(const T* c, T* target_gram) {
        FastBuffers<T>& ws = C_.ws;
        const std::int64_t n = P_.rows, d = P_.d;
        const int parts = C_.runner.parts_for(n * d * d, kParallelGramFlops);
        const auto dd = static_cast<blas::index_t>(d);
        const std::int64_t block_rows = std::max<std::int64_t>(
            64, kGramBlockBytes / static_cast<std::int64_t>(sizeof(T) * d) & ~std::int64_t{15});
        for_each_part(C_.runner, parts, n, [&](int part, RowRange rows) {
            T* target = part_gram(part, target_gram);
            if (P_.features <= narrow_gram_max_features<T>) {  // in place, no gather
                zero_upper(target);
                narrow_gram_accumulate(rows.size(), P_.features, P_.intercept, P_.X + rows.begin * P_.features,
                                       c + rows.begin, T(1), target, gram_scratch(part));
                return;
            }
            T* block = ws.gathered_rows.data() + rows.begin * d;
            bool first = true;
            for (std::int64_t start = rows.begin; start < rows.end; start += block_rows) {
                const std::int64_t stop = std::min(rows.end, start + block_rows);
                const std::int64_t m = gather_weighted_rows(stop - start, P_.features, P_.intercept,
                                                            P_.X + start * P_.features, c + start, block);
                if (m == 0) continue;
                if (first)
                    blas::gram_upper(static_cast<blas::index_t>(m), dd, block, target);
                else
                    blas::gram_upper_accumulate(static_cast<blas::index_t>(m), dd, block, T(1), target);
                first = false;
            }
            if (first) zero_upper(target);  // no weighted row in this part
        });
        add_partial_grams(parts, target_gram);
    }

private:
    // The upper triangle of a d x d matrix set to zero.
    void zero_upper(T* G) const {
        const std::int64_t d = P_.d;
        for (std::int64_t i = 0; i < d; ++i) std::fill(G + i * d + i, G + (i + 1) * d, T(0));
    }

    // Part k's Gram: `first` for part 0, the scratch Grams for the others.
    T* part_gram(int part, T* first) const {
        const std::int64_t d = P_.d;
        return part == 0 ? first : C_.ws.partial_grams.data() + (part - 1) * d * d;
    }

    T* gram_scratch(int part) const { return C_.ws.gram_scratch.data() + part * narrow_gram_scratch_size(P_.d); }

    // Rows whose weight rose are gathered to the front of their part's
    // region of the buffer, rows whose weight fell to its back; two
    // accumulations with alpha +-1 into the part's own Gram (part 0's is the
    // Gram itself, the others' upper triangles are added in part order).
    void add_changes(const T* c_new, const T* c_old) {
        FastBuffers<T>& ws = C_.ws;
        const std::int64_t d = P_.d;
        const int parts = C_.row_parts(P_);
        for_each_part(C_.runner, parts, P_.rows, [&](int part, RowRange rows) {
            T* region = ws.gathered_rows.data() + rows.begin * d;
            T* target = part_gram(part, ws.gram.data());
            if (part > 0) zero_upper(target);
            const std::int64_t m = rows.size();
            std::int64_t rising = 0, falling = 0;
            gather_changed_rows(m, P_.features, P_.intercept, P_.X + rows.begin * P_.features, c_new + rows.begin,
                                c_old + rows.begin, region, rising, falling);
            if (d <= narrow_gram_max_features<T>) {
                T* scratch = gram_scratch(part);
                narrow_gram_accumulate(rising, d, false, region, static_cast<const T*>(nullptr), T(1), target,
                                       scratch);
                narrow_gram_accumulate(falling, d, false, region + (m - falling) * d,
                                       static_cast<const T*>(nullptr), T(-1), target, scratch);
                return;
            }
            const auto dd = static_cast<blas::index_t>(d);
            if (rising > 0)
                blas::gram_upper_accumulate(static_cast<blas::index_t>(rising), dd, region, T(1), target);
            if (falling > 0)
                blas::gram_upper_accumulate(static_cast<blas::index_t>(falling), dd, region + (m - falling) * d,
                                            T(-1), target);
        });
        add_partial_grams(parts, ws.gram.data());
    }

    // G's upper triangle += the other parts' (part order).
    void add_partial_grams(int parts, T* G) {
        const std::int64_t d = P_.d;
        for (int k = 1; k < parts; ++k) {
            const T* other = part_gram(k, G);
            for (std::int64_t i = 0; i < d; ++i)
                for (std::int64_t j = i; j < d; ++j) G[i * d + j] += other[i * d + j];
        }
    }

    const Problem<T>& P_;
    Context<T>& C_;
    bool valid_ = false;
    int incremental_in_a_row_ = 0;
};

}  // namespace rh::cpu::fast

// The buffers of the reference-order path (cpu/reference/), owned by the
// engine and reused across iterations and batches.
#pragma once

#include <cstdint>
#include <vector>

#include "cpu/buffer_growth.hpp"
#include "cpu/platform/staggered_allocator.hpp"

namespace rh::cpu::reference {

template <class T>
struct ReferenceBuffers {
    StaggeredVector<T> design;              // Z = [X, 1] when fitting an intercept (n x d)
    StaggeredVector<T> weighted_design;     // Z * (w kappa(r)) for the Gram (n x d)
    StaggeredVector<T> residual;            // r = y - Z theta at the current point
    StaggeredVector<T> candidate_residual;  // a trial's residual
    StaggeredVector<T> design_step;         // Z step, for O(n) backtracking
    StaggeredVector<T> weighted_score;      // w * score(r)
    std::vector<T> shift, scratch;          // d
    std::vector<T> gram, newton_matrix;     // d x d
    std::vector<T> majorizer;               // d x d: M = (Z' diag(w) Z + J_prev) / N + ridge I

    void reserve(BufferGrowth& growth, std::int64_t rows, std::int64_t d, bool needs_design_copy) {
        if (needs_design_copy) growth.grow(design, rows * d);
        growth.grow(weighted_design, rows * d);
        for (auto* buffer : {&residual, &candidate_residual, &design_step, &weighted_score}) growth.grow(*buffer, rows);
        for (auto* buffer : {&shift, &scratch}) growth.grow(*buffer, d);
        for (auto* buffer : {&gram, &newton_matrix, &majorizer}) growth.grow(*buffer, d * d);
    }
};

}  // namespace rh::cpu::reference

// One-read passes for narrow designs (p <= narrow_pass_max_features<T>)
// over column panels of X: every row serves both products of a fused pass
// (fast_path.hpp, fused_step_product / fused_trial):
//
//     dz_i = x_i . v,   then a per-row update that yields s_i,   acc += s_i x_i.
//
// The panels store X by groups of rows, column by column (one vector of
// rows per column), so both products are one multiply-add per column and
// group: no horizontal sums per row. They are built once per update
// (narrow_build_panels) and serve every pass of it. For short rows BLAS
// GEMV is dominated by per-call and per-row overheads, and row-major dot
// products by their horizontal sums. Defined and explicitly instantiated
// (float, double) in narrow_passes.cpp, once per instruction-set level
// (cpu/platform/isa_dispatch.hpp).
#pragma once

#include <cstdint>

#include "cpu/kernels/fast_kernels.hpp"
#include "cpu/kernels/kernel_args.hpp"

namespace rh::cpu::fast {

// Widest p the narrow passes take (256 bytes of a row: 32 float64 / 64
// float32 columns; the panel passes keep at most 64 column sums). Wider
// rows, the reference class's 90 included, use blocked BLAS GEMV; the
// panels were not measured there.
template <class T>
inline constexpr std::int64_t narrow_pass_max_features = 8 * 32 / static_cast<std::int64_t>(sizeof(T));

// Columns a group of rows stores in the panels: p rounded up to 4.
inline std::int64_t narrow_panel_columns(std::int64_t p) { return (p + 3) / 4 * 4; }

// Elements of the panels of n rows of p features (any level's layout fits).
template <class T>
inline std::int64_t narrow_panel_size(std::int64_t n, std::int64_t p) {
    return (n + 16) * narrow_panel_columns(p);
}

// The panels of rows [0, n) of X (n x p, row-major), and whether every
// value of those rows is finite (tested in the same read). Rows [begin,
// end) of a larger batch, begin a multiple of 16, have their panels at
// panels + begin * round_up(p, 4): a part's passes take that pointer.
template <class T>
bool narrow_build_panels(std::int64_t n, std::int64_t p, const T* X, T* panels);

// Below, `panels` are the panels of the n rows a pass covers.

// out_i = ||z_i||, z_i = (x_i, 1) with an intercept, x_i without.
template <class T>
void narrow_row_norms(std::int64_t n, std::int64_t p, const T* panels, bool intercept, T* out);

// Newton's full step (kernel_args.hpp, StepPass): at r_next_i = r_i + dz_i
// what full_step_rows (fast_kernels.hpp) computes there; *loss is
// loss_sum(n, r, dz, 1, w, tau), bit for bit (the line search's loss at t = 1).
template <class T>
ScoreSums narrow_step_pass(const StepPass<T>& pass);

// The residual at the start of a solve (ResidualPass): s, the first
// gradient's X' s and, with scoring.c, the curvature as narrow_step_pass.
// Returns the sums (counts only with c).
template <class T>
ScoreSums narrow_residual_pass(const ResidualPass<T>& pass);

// Newton's damped step (AdvancePass): r += t dz, scored as
// narrow_step_pass, with the next gradient's X' s. No product with X itself.
template <class T>
ScoreSums narrow_advance_pass(const AdvancePass<T>& pass);

// A LAMM trial (TrialPass): s in registers only (no later step reads a
// trial's s); returns the loss and score sums.
template <class T>
TrialSums narrow_trial_pass(const TrialPass<T>& pass);

// Two LAMM trials in one read (PairTrialPass): the first's score_sum is
// left 0 (a caller rescores an accepted first trial). Residuals, losses and
// the second's sums and X' s are bit for bit what narrow_trial_pass gives.
template <class T>
TrialSums narrow_pair_trial_pass(const PairTrialPass<T>& pass);

}  // namespace rh::cpu::fast

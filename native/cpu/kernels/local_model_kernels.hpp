// The O(n) and O(|U| p) kernels of fast LAMM's local Huber model
// (local_huber_model.hpp). Defined and explicitly instantiated (float,
// double) in local_model_kernels.cpp, once per instruction-set level
// (cpu/platform/isa_dispatch.hpp), with FMA contraction like the other fast-path
// kernels.
#pragma once

#include <cstdint>

#include "cpu/kernels/kernel_args.hpp"

namespace rh::cpu::fast {

// The gathered rows: column j of the m uncertain rows at columns + j *
// stride, the columns padded with zero columns to a multiple of 4 (at most
// kLocalMaxColumns), the rows with zero rows to a multiple of kLocalRowPad.
inline constexpr std::int64_t kLocalRowPad = 16;
inline std::int64_t local_padded_columns(std::int64_t d) { return (d + 3) / 4 * 4; }
// The widest rows a local model serves (the narrow Gram kernel's width),
// and its padded columns with the intercept.
inline constexpr std::int64_t kLocalMaxFeatures = 256;
inline constexpr std::int64_t kLocalMaxColumns = (kLocalMaxFeatures + 1 + 3) / 4 * 4;
// The most rows a local model gathers: a quarter of the batch (more
// uncertain rows than that and a model would not pay).
inline std::int64_t local_uncertain_limit(std::int64_t rows) { return rows / 4; }
// A stride for up to `rows` gathered rows: whole vectors, and not a
// multiple of 4 KiB (columns that all started at one page offset would
// share the L1 sets).
inline std::int64_t local_column_stride(std::int64_t rows) {
    return (rows + kLocalRowPad - 1) / kLocalRowPad * kLocalRowPad + kLocalRowPad;
}

// out_i = ||z_i|| for rows [0, n) of X (n x p, row-major), z_i = (x_i, 1)
// with an intercept, x_i without (rows too wide for the panels).
template <class T>
void local_row_norms(std::int64_t n, std::int64_t p, const T* X, bool intercept, T* out);

// How many of rows [0, n) are uncertain (below).
template <class T>
std::int64_t local_count_uncertain(std::int64_t n, const T* r, const T* norms, T tau, T reach);

// Rows [0, n) (LocalClassification): an "uncertain" row has | |r_i| - tau |
// <= reach * norms_i (near a corner of the loss). A certain row gets the
// Gram weight c_i = w_i when an inlier (|r_i| < tau), 0 when an outlier; an
// uncertain row gets c_i = 0 and its index goes to index[k] (k its rank
// among them). index: n entries. *changed counts the rows whose c_i differs
// from c_gram_i, *weighted those with c_i > 0. Returns the number of
// uncertain rows.
template <class T>
std::int64_t local_classify_rows(const LocalClassification<T>& rows);

// Gathers rows index[0..m) of X (row-major, p features), with their r and
// w, into `out` (kernel_args.hpp, GatheredRows; its pointers may be
// advanced by a caller's offset k: out.columns + k, out.r0 + k, ...).
template <class T>
void local_gather_rows(const T* X, const T* r, const T* w, const std::int64_t* index, const GatheredRows<T>& out);

// Zeros past the m gathered rows (to whole vectors) and in the pad
// columns: those lanes have t = 0 and w = 0 and add nothing.
template <class T>
void local_pad_rows(const GatheredRows<T>& rows);

// The gathered rows at a step delta (d = p + intercept entries) from the
// point where r0 was their residual: t_k = r0_k - (z_k . delta). Returns
// sum_k w0_k loss(t_k); with `total` non-null also total[j] =
// sum_k z_kj w0_k score(t_k) for the d entries.
template <class T>
double local_rows_pass(const GatheredRows<T>& rows, const T* delta, T tau, double* total);

}  // namespace rh::cpu::fast

#include "cpu/local_model_kernels.hpp"

#include <algorithm>
#include <cmath>
#include <type_traits>

#include "core/multiversion.hpp"
#include "cpu/fast_huber.hpp"

namespace rh::cpu::fast {

#define RH_KERNEL_FILE "cpu/local_model_kernels.inc"
#include "core/per_target_kernels.inc"

template <class T>
void local_row_norms(std::int64_t n, std::int64_t p, const T* X, bool intercept, T* out) {
    RH_BY_LEVEL(row_major_norms, n, p, X, intercept, out)
}

template <class T>
std::int64_t local_count_uncertain(std::int64_t n, const T* r, const T* norms, T tau, T reach) {
    RH_BY_LEVEL(count_uncertain, n, r, norms, tau, reach)
}

template <class T>
std::int64_t local_classify_rows(std::int64_t n, const T* r, const T* w, const T* norms, T tau, T reach,
                                 const T* c_gram, T* c, std::int64_t* index, std::int64_t* changed,
                                 std::int64_t* weighted) {
    RH_BY_LEVEL(classify_rows, n, r, w, norms, tau, reach, c_gram, c, index, changed, weighted)
}

template <class T>
void local_gather_rows(std::int64_t m, std::int64_t p, const T* X, bool intercept, const T* r, const T* w,
                       const std::int64_t* index, T* columns, std::int64_t stride, T* r0, T* w0) {
    RH_BY_LEVEL(gather_rows, m, p, X, intercept, r, w, index, columns, stride, r0, w0)
}

template <class T>
void local_pad_rows(std::int64_t m, std::int64_t d, T* columns, std::int64_t stride, T* r0, T* w0) {
    RH_BY_LEVEL(pad_rows, m, d, columns, stride, r0, w0)
}

template <class T>
double local_rows_pass(std::int64_t m, std::int64_t p, bool intercept, const T* columns, std::int64_t stride,
                       const T* r0, const T* w0, const T* delta, T tau, double* total) {
    RH_BY_LEVEL(rows_pass, m, p, intercept, columns, stride, r0, w0, delta, tau, total)
}

template void local_row_norms<float>(std::int64_t, std::int64_t, const float*, bool, float*);
template void local_row_norms<double>(std::int64_t, std::int64_t, const double*, bool, double*);
template std::int64_t local_count_uncertain<float>(std::int64_t, const float*, const float*, float, float);
template std::int64_t local_count_uncertain<double>(std::int64_t, const double*, const double*, double, double);
template std::int64_t local_classify_rows<float>(std::int64_t, const float*, const float*, const float*, float,
                                                 float, const float*, float*, std::int64_t*, std::int64_t*,
                                                 std::int64_t*);
template std::int64_t local_classify_rows<double>(std::int64_t, const double*, const double*, const double*, double,
                                                  double, const double*, double*, std::int64_t*, std::int64_t*,
                                                  std::int64_t*);
template void local_gather_rows<float>(std::int64_t, std::int64_t, const float*, bool, const float*, const float*,
                                       const std::int64_t*, float*, std::int64_t, float*, float*);
template void local_gather_rows<double>(std::int64_t, std::int64_t, const double*, bool, const double*,
                                        const double*, const std::int64_t*, double*, std::int64_t, double*, double*);
template void local_pad_rows<float>(std::int64_t, std::int64_t, float*, std::int64_t, float*, float*);
template void local_pad_rows<double>(std::int64_t, std::int64_t, double*, std::int64_t, double*, double*);
template double local_rows_pass<float>(std::int64_t, std::int64_t, bool, const float*, std::int64_t, const float*,
                                       const float*, const float*, float, double*);
template double local_rows_pass<double>(std::int64_t, std::int64_t, bool, const double*, std::int64_t,
                                        const double*, const double*, const double*, double, double*);

}  // namespace rh::cpu::fast

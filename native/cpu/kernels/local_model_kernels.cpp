#include "cpu/kernels/local_model_kernels.hpp"

#include <algorithm>
#include <cmath>
#include <type_traits>

#include "cpu/platform/isa_dispatch.hpp"
#include "core/huber.hpp"

namespace rh::cpu::fast {

#define RH_KERNEL_FILE "cpu/kernels/local_model_kernels.inc"
#include "cpu/platform/per_target_kernels.inc"

template <class T>
void local_row_norms(std::int64_t n, std::int64_t p, const T* X, bool intercept, T* out) {
    RH_BY_LEVEL(row_major_norms, n, p, X, intercept, out)
}

template <class T>
std::int64_t local_count_uncertain(std::int64_t n, const T* r, const T* norms, T tau, T reach) {
    RH_BY_LEVEL(count_uncertain, n, r, norms, tau, reach)
}

template <class T>
std::int64_t local_classify_rows(const LocalClassification<T>& rows) {
    RH_BY_LEVEL(classify_rows, rows)
}

template <class T>
void local_gather_rows(const T* X, const T* r, const T* w, const std::int64_t* index, const GatheredRows<T>& out) {
    RH_BY_LEVEL(gather_rows, X, r, w, index, out)
}

template <class T>
void local_pad_rows(const GatheredRows<T>& rows) {
    RH_BY_LEVEL(pad_rows, rows)
}

template <class T>
double local_rows_pass(const GatheredRows<T>& rows, const T* delta, T tau, double* total) {
    RH_BY_LEVEL(rows_pass, rows, delta, tau, total)
}

#define RH_INSTANTIATE(T)                                                                                       \
    template void local_row_norms<T>(std::int64_t, std::int64_t, const T*, bool, T*);                           \
    template std::int64_t local_count_uncertain<T>(std::int64_t, const T*, const T*, T, T);                    \
    template std::int64_t local_classify_rows<T>(const LocalClassification<T>&);                                \
    template void local_gather_rows<T>(const T*, const T*, const T*, const std::int64_t*, const GatheredRows<T>&); \
    template void local_pad_rows<T>(const GatheredRows<T>&);                                                    \
    template double local_rows_pass<T>(const GatheredRows<T>&, const T*, T, double*);
RH_FOR_EACH_FLOAT(RH_INSTANTIATE)
#undef RH_INSTANTIATE

}  // namespace rh::cpu::fast

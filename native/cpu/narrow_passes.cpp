#include "cpu/narrow_passes.hpp"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <type_traits>
#include <utility>

#include "core/multiversion.hpp"
#include "cpu/fast_huber.hpp"

namespace rh::cpu::fast {

// The kernels once per instruction-set level: 64-byte vectors with AVX-512,
// 32-byte ones otherwise.
#define RH_KERNEL_FILE "cpu/narrow_passes_kernel.inc"
#include "core/per_target_kernels.inc"

template <class T>
bool narrow_build_panels(std::int64_t n, std::int64_t p, const T* X, T* panels) {
    RH_BY_LEVEL(build_panels, n, p, X, panels)
}

template <class T>
void narrow_row_norms(std::int64_t n, std::int64_t p, const T* panels, bool intercept, T* out) {
    RH_BY_LEVEL(row_norms, n, p, panels, intercept, out)
}

template <class T>
ScoreSums narrow_step_pass(std::int64_t n, std::int64_t p, const T* panels, const T* step, T b, const T* r,
                          const T* w, T tau, T h, const T* c_gram, T* dz, T* r_next, T* s, T* c, T* product,
                          double* loss) {
    RH_BY_LEVEL(step_pass, n, p, panels, step, b, r, w, tau, h, c_gram, dz, r_next, s, c, product, loss)
}

// fast_kernels.hpp's loss sums live here, at the step pass's level.
template <class T>
double loss_sum(std::int64_t n, const T* r, const T* dz, T t, const T* w, T tau) {
    RH_BY_LEVEL(loss_pass, n, r, dz, t, w, tau)
}

template <class T>
void loss_sums(std::int64_t n, const T* r, const T* dz, const T* t, int count, const T* w, T tau, double* out) {
    RH_BY_LEVEL(loss_batch_pass, n, r, dz, t, count, w, tau, out)
}

template <class T>
ScoreSums narrow_residual_pass(std::int64_t n, std::int64_t p, const T* panels, const T* theta, T b, const T* y,
                               const T* w, T tau, T h, const T* c_gram, T* r, T* s, T* c, T* product) {
    RH_BY_LEVEL(residual_pass, n, p, panels, theta, b, y, w, tau, h, c_gram, r, s, c, product)
}

template <class T>
ScoreSums narrow_advance_pass(std::int64_t n, std::int64_t p, const T* panels, T t, const T* dz, T* r, const T* w,
                              T tau, T h, const T* c_gram, T* s, T* c, T* product) {
    RH_BY_LEVEL(advance_pass, n, p, panels, t, dz, r, w, tau, h, c_gram, s, c, product)
}

template <class T>
TrialSums narrow_trial_pass(std::int64_t n, std::int64_t p, const T* panels, const T* change, T b, const T* r,
                            const T* w, T tau, T* r_trial, T* product) {
    RH_BY_LEVEL(trial_pass, n, p, panels, change, b, r, w, tau, r_trial, product)
}

template <class T>
TrialSums narrow_pair_trial_pass(std::int64_t n, std::int64_t p, const T* panels, const T* change_first, T b_first,
                                 const T* change_second, T b_second, const T* r, const T* w, T tau, T* r_first,
                                 T* r_second, T* product, TrialSums* first_sums) {
    RH_BY_LEVEL(pair_trial_pass, n, p, panels, change_first, b_first, change_second, b_second, r, w, tau, r_first,
                r_second, product, first_sums)
}

template TrialSums narrow_pair_trial_pass<float>(std::int64_t, std::int64_t, const float*, const float*, float,
                                                 const float*, float, const float*, const float*, float, float*,
                                                 float*, float*, TrialSums*);
template TrialSums narrow_pair_trial_pass<double>(std::int64_t, std::int64_t, const double*, const double*, double,
                                                  const double*, double, const double*, const double*, double,
                                                  double*, double*, double*, TrialSums*);
template void narrow_row_norms<float>(std::int64_t, std::int64_t, const float*, bool, float*);
template void narrow_row_norms<double>(std::int64_t, std::int64_t, const double*, bool, double*);
template bool narrow_build_panels<float>(std::int64_t, std::int64_t, const float*, float*);
template bool narrow_build_panels<double>(std::int64_t, std::int64_t, const double*, double*);
template ScoreSums narrow_step_pass<float>(std::int64_t, std::int64_t, const float*, const float*, float,
                                          const float*, const float*, float, float, const float*, float*, float*,
                                          float*, float*, float*, double*);
template ScoreSums narrow_step_pass<double>(std::int64_t, std::int64_t, const double*, const double*, double,
                                           const double*, const double*, double, double, const double*, double*,
                                           double*, double*, double*, double*, double*);
template double loss_sum<float>(std::int64_t, const float*, const float*, float, const float*, float);
template double loss_sum<double>(std::int64_t, const double*, const double*, double, const double*, double);
template void loss_sums<float>(std::int64_t, const float*, const float*, const float*, int, const float*, float,
                               double*);
template void loss_sums<double>(std::int64_t, const double*, const double*, const double*, int, const double*,
                                double, double*);
template ScoreSums narrow_residual_pass<float>(std::int64_t, std::int64_t, const float*, const float*, float,
                                               const float*, const float*, float, float, const float*, float*,
                                               float*, float*, float*);
template ScoreSums narrow_residual_pass<double>(std::int64_t, std::int64_t, const double*, const double*, double,
                                                const double*, const double*, double, double, const double*, double*,
                                                double*, double*, double*);
template ScoreSums narrow_advance_pass<float>(std::int64_t, std::int64_t, const float*, float, const float*, float*,
                                              const float*, float, float, const float*, float*, float*, float*);
template ScoreSums narrow_advance_pass<double>(std::int64_t, std::int64_t, const double*, double, const double*,
                                               double*, const double*, double, double, const double*, double*,
                                               double*, double*);
template TrialSums narrow_trial_pass<float>(std::int64_t, std::int64_t, const float*, const float*, float,
                                            const float*, const float*, float, float*, float*);
template TrialSums narrow_trial_pass<double>(std::int64_t, std::int64_t, const double*, const double*, double,
                                             const double*, const double*, double, double*, double*);

}  // namespace rh::cpu::fast

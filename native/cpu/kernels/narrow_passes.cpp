#include "cpu/kernels/narrow_passes.hpp"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <type_traits>
#include <utility>

#include "cpu/platform/isa_dispatch.hpp"
#include "core/huber.hpp"

namespace rh::cpu::fast {

// The kernels once per instruction-set level: 64-byte vectors with AVX-512,
// 32-byte ones otherwise.
#define RH_KERNEL_FILE "cpu/kernels/narrow_passes_kernel.inc"
#include "cpu/platform/per_target_kernels.inc"

template <class T>
bool narrow_build_panels(std::int64_t n, std::int64_t p, const T* X, T* panels) {
    RH_BY_LEVEL(build_panels, n, p, X, panels)
}

template <class T>
void narrow_row_norms(std::int64_t n, std::int64_t p, const T* panels, bool intercept, T* out) {
    RH_BY_LEVEL(row_norms, n, p, panels, intercept, out)
}

template <class T>
ScoreSums narrow_step_pass(const StepPass<T>& pass) {
    RH_BY_LEVEL(step_pass, pass)
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
ScoreSums narrow_residual_pass(const ResidualPass<T>& pass) {
    RH_BY_LEVEL(residual_pass, pass)
}

template <class T>
ScoreSums narrow_advance_pass(const AdvancePass<T>& pass) {
    RH_BY_LEVEL(advance_pass, pass)
}

template <class T>
TrialSums narrow_trial_pass(const TrialPass<T>& pass) {
    RH_BY_LEVEL(trial_pass, pass)
}

template <class T>
TrialSums narrow_pair_trial_pass(const PairTrialPass<T>& pass) {
    RH_BY_LEVEL(pair_trial_pass, pass)
}

#define RH_INSTANTIATE(T)                                                                                 \
    template bool narrow_build_panels<T>(std::int64_t, std::int64_t, const T*, T*);                       \
    template void narrow_row_norms<T>(std::int64_t, std::int64_t, const T*, bool, T*);                    \
    template double loss_sum<T>(std::int64_t, const T*, const T*, T, const T*, T);                        \
    template void loss_sums<T>(std::int64_t, const T*, const T*, const T*, int, const T*, T, double*);    \
    template ScoreSums narrow_step_pass<T>(const StepPass<T>&);                                           \
    template ScoreSums narrow_residual_pass<T>(const ResidualPass<T>&);                                   \
    template ScoreSums narrow_advance_pass<T>(const AdvancePass<T>&);                                     \
    template TrialSums narrow_trial_pass<T>(const TrialPass<T>&);                                         \
    template TrialSums narrow_pair_trial_pass<T>(const PairTrialPass<T>&);
RH_FOR_EACH_FLOAT(RH_INSTANTIATE)
#undef RH_INSTANTIATE

}  // namespace rh::cpu::fast

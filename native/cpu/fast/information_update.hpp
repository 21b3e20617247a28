// The fast path's closing information update (ALGORITHM.md, "Closing the
// batch"): the Gram brought to w kappa(r_hat) (incrementally from the last
// Newton or local-model Gram when cheaper), then J_new = J_prev + Gram,
// mirrored to the full matrix.
#pragma once

#include <cstdint>

#include "cpu/cpu_diagnostics.hpp"
#include "cpu/fast/gram_cache.hpp"
#include "cpu/fast/memory_terms.hpp"
#include "cpu/fast/problem.hpp"
#include "cpu/fast/row_passes.hpp"

namespace rh::cpu::fast {

// ws.residual holds r_hat; `current` is its scoring pass when the solver
// kept one (else it is scored here).
template <class T>
void information_update(const Problem<T>& P, Context<T>& C, GramCache<T>& gram, const ScoreSums* current,
                        T* next_information, GramCounters& counters) {
    const ScoreSums sums = current != nullptr ? *current : scores(P, C, C.ws.residual.data(), true);
    gram.refresh(sums, counters);
    T* G = C.ws.gram.data();
    mirror_upper(P.d, G);
    const T* J = P.information_prev;
    for (std::int64_t k = 0; k < P.d * P.d; ++k) next_information[k] = J[k] + G[k];
}

}  // namespace rh::cpu::fast

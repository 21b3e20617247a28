// The fast path's meat update (amendment 0003): S_new = S_prev +
// Z' diag(w score(r_hat)^2) Z, one weighted Gram of the batch at theta_hat,
// formed as the Gram cache's full recompute forms its Gram (the register-
// tiled kernel for narrow rows, gather + SYRK for wider ones, split over
// the parts and added in part order). ws.residual holds r_hat once the
// information update has run.
#pragma once

#include <cstdint>

#include "core/huber.hpp"
#include "cpu/fast/gram_cache.hpp"
#include "cpu/fast/memory_terms.hpp"
#include "cpu/fast/problem.hpp"

namespace rh::cpu::fast {

template <class T>
void meat_update(const Problem<T>& P, Context<T>& C, GramCache<T>& gram, const T* meat_prev, T* next_meat) {
    FastBuffers<T>& ws = C.ws;
    const T* r = ws.residual.data();
    T* weights = ws.meat_weights.data();
    for (std::int64_t i = 0; i < P.rows; ++i) {
        const T s = core::huber_score(r[i], P.tau);
        weights[i] = P.w[i] * (s * s);
    }
    T* G = ws.meat_gram.data();
    gram.weighted_gram_into(weights, G);
    mirror_upper(P.d, G);
    for (std::int64_t k = 0; k < P.d * P.d; ++k) next_meat[k] = meat_prev[k] + G[k];
}

}  // namespace rh::cpu::fast

// The memory and history part of the surrogate objective along a line
// search's step (ALGORITHM.md, "Smooth surrogate objective"), once for every
// engine: with D0 = theta - theta_prev and D(t) = D0 - t step,
//
//     0.5 D(t)' J D(t) / N - c D(t)' s  =  0.5 (a - t (b1 + b2) + t^2 cc) / N - c (h0 - t h1)
//
// so every trial of a search costs O(1) here once the six sums are formed
// (a = D0' J D0, b1 = step' J D0, b2 = D0' J step, cc = step' J step,
// h0 = D0' s, h1 = step' s). How an engine forms the sums (BLAS products
// and index-order dots on the CPU, block reductions on the GPU) is its own
// business; their use is here.
#pragma once

#include "core/host_device.hpp"

namespace rh::core {

struct MemoryAlongStep {
    double a = 0.0, b1 = 0.0, b2 = 0.0, c = 0.0;
    double history0 = 0.0, history1 = 0.0;
    double inverse_n = 1.0;            // 1 / N (the weight sum after the batch)
    double history_coefficient = 0.0;  // c of the historical subgradient
    bool uses_history = false;

    // The memory and history part of f at theta - t step.
    RH_HOST_DEVICE double at(double t) const {
        double m = 0.5 * (a - t * (b1 + b2) + t * t * c) * inverse_n;
        if (uses_history) m -= history_coefficient * (history0 - t * history1);
        return m;
    }
};

}  // namespace rh::core

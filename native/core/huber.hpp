// Scalar Huber pieces (ALGORITHM.md, "Huber pieces"), written once for every
// engine. The operation order mirrors the NumPy reference expression by
// expression (e.g. tau*a - (0.5*tau)*tau), and the build disables FMA
// contraction, so a float evaluates to the same bits as the reference.
#pragma once

#include <cmath>

namespace rh::core {

template <class T>
inline T huber_loss(T r, T tau) noexcept {
    const T a = std::fabs(r);
    return a <= tau ? (T(0.5) * r) * r : tau * a - (T(0.5) * tau) * tau;
}

template <class T>
inline T huber_score(T r, T tau) noexcept {
    return r < -tau ? -tau : (r > tau ? tau : r);
}

// kappa(r): 1 inside (-tau+h, tau-h), 0 beyond tau+h, linear ramps between.
// Written as selects rather than early returns so loops over rows vectorize.
template <class T>
inline T smoothed_curvature(T r, T tau, T h) noexcept {
    const T two_h = T(2) * h;
    const T left_ramp = T(0.5) + (r + tau) / two_h;
    const T right_ramp = T(0.5) - (r - tau) / two_h;
    const T outer = r <= tau + h ? right_ramp : T(0);
    const T inner = r < tau - h ? T(1) : outer;
    const T lower = r <= -tau + h ? left_ramp : inner;
    return r < -tau - h ? T(0) : lower;
}

}  // namespace rh::core

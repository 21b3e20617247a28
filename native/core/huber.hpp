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
template <class T>
inline T smoothed_curvature(T r, T tau, T h) noexcept {
    const T two_h = T(2) * h;
    if (r < -tau - h) return T(0);
    if (r <= -tau + h) return T(0.5) + (r + tau) / two_h;
    if (r < tau - h) return T(1);
    if (r <= tau + h) return T(0.5) - (r - tau) / two_h;
    return T(0);
}

}  // namespace rh::core

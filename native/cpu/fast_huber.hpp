// Scalar Huber pieces of the fast path (fast_kernels.cpp, the narrow
// passes), written once. Unlike core/huber.hpp they need no bit agreement
// with NumPy: the ramp divides by 2h as a multiplication by its inverse, and
// the loss takes (tau/2) tau precomputed. Selects rather than branches, so
// the loops over rows vectorize.
#pragma once

#include <cmath>

namespace rh::cpu::fast {

// score(r): r clipped to [-tau, tau].
template <class T>
inline T clip(T r, T tau) noexcept {
    return r < -tau ? -tau : (r > tau ? tau : r);
}

// kappa(r): 1 inside (-tau+h, tau-h), 0 beyond tau+h, linear ramps between.
template <class T>
inline T curvature(T r, T tau, T h, T inverse_two_h) noexcept {
    const T left_ramp = T(0.5) + (r + tau) * inverse_two_h;
    const T right_ramp = T(0.5) - (r - tau) * inverse_two_h;
    const T outer = r <= tau + h ? right_ramp : T(0);
    const T inner = r < tau - h ? T(1) : outer;
    const T lower = r <= -tau + h ? left_ramp : inner;
    return r < -tau - h ? T(0) : lower;
}

// loss(r), half_tau_squared = (0.5 tau) tau.
template <class T>
inline T huber_loss(T r, T tau, T half_tau_squared) noexcept {
    const T a = r < T(0) ? -r : r;
    return a <= tau ? (T(0.5) * r) * r : tau * a - half_tau_squared;
}

}  // namespace rh::cpu::fast

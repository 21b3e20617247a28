// The Huber pieces (ALGORITHM.md, "Huber pieces"), written once for every
// engine, host and device.
//
// Two roundings of the same functions:
//  * reference order (huber_loss, huber_score, smoothed_curvature): the NumPy
//    reference's operation order, expression by expression (e.g. tau*a -
//    (0.5*tau)*tau, the ramps divided by 2h); with FMA contraction off a float
//    evaluates to the reference's bits (the CPU engine's reference-order path);
//  * fast form (huber_loss_fast, smoothed_curvature_fast): (0.5 tau) tau and
//    1/(2h) formed once by the caller, the ramps multiplied by the inverse
//    (the CPU fast path's kernels and the CUDA kernels).
// Selects rather than branches, so loops over rows vectorize.
#pragma once

#include "core/host_device.hpp"

namespace rh::core {

// loss(r) = r^2 / 2 inside [-tau, tau], tau |r| - tau^2 / 2 outside.
template <class T>
RH_HOST_DEVICE inline T huber_loss(T r, T tau) noexcept {
    const T a = r < T(0) ? -r : r;
    return a <= tau ? (T(0.5) * r) * r : tau * a - (T(0.5) * tau) * tau;
}

// score(r) = r clipped to [-tau, tau].
template <class T>
RH_HOST_DEVICE inline T huber_score(T r, T tau) noexcept {
    return r < -tau ? -tau : (r > tau ? tau : r);
}

// kappa(r): 1 inside (-tau+h, tau-h), 0 beyond tau+h, linear ramps between.
template <class T>
RH_HOST_DEVICE inline T smoothed_curvature(T r, T tau, T h) noexcept {
    const T two_h = T(2) * h;
    const T left_ramp = T(0.5) + (r + tau) / two_h;
    const T right_ramp = T(0.5) - (r - tau) / two_h;
    const T outer = r <= tau + h ? right_ramp : T(0);
    const T inner = r < tau - h ? T(1) : outer;
    const T lower = r <= -tau + h ? left_ramp : inner;
    return r < -tau - h ? T(0) : lower;
}

// loss(r) with half_tau_squared = (0.5 tau) tau formed by the caller.
template <class T>
RH_HOST_DEVICE inline T huber_loss_fast(T r, T tau, T half_tau_squared) noexcept {
    const T a = r < T(0) ? -r : r;
    return a <= tau ? (T(0.5) * r) * r : tau * a - half_tau_squared;
}

// kappa(r) with inverse_two_h = 1 / (2h) formed by the caller.
template <class T>
RH_HOST_DEVICE inline T smoothed_curvature_fast(T r, T tau, T h, T inverse_two_h) noexcept {
    const T left_ramp = T(0.5) + (r + tau) * inverse_two_h;
    const T right_ramp = T(0.5) - (r - tau) * inverse_two_h;
    const T outer = r <= tau + h ? right_ramp : T(0);
    const T inner = r < tau - h ? T(1) : outer;
    const T lower = r <= -tau + h ? left_ramp : inner;
    return r < -tau - h ? T(0) : lower;
}

}  // namespace rh::core

// The reference-order evaluator for the damped-Newton driver
// (core/newton_driver.hpp): NumPy's arithmetic, operation by operation
// (surrogate_objective.hpp), the solve ladder the reference runs, and the
// majorizer's step when the line search is exhausted.
//
// Backtracking in O(n): the trial at t = 1 is evaluated exactly, which also
// yields Z step = r(theta - step) - r(theta); a later trial's residual is
// then r + t Z step, whose value is exact up to a rounding band (a few ulps
// of the magnitudes that formed r). A trial whose cheap value exceeds F by
// more than the band cannot decrease f and is rejected without the O(n p)
// product; any other trial is evaluated exactly, as the reference does.
#pragma once

#include <cmath>
#include <cstdint>
#include <limits>
#include <utility>

#include "core/diagnostics.hpp"
#include "core/search_steps.hpp"
#include "cpu/reference/surrogate_objective.hpp"
#include "cpu/solve_ladder.hpp"

namespace rh::cpu::reference {

template <class T>
class NewtonEvaluator {
public:
    // gradient: d entries the evaluator may use (the driver's buffer).
    NewtonEvaluator(const SurrogateObjective<T>& objective, SolveLadder<T>& ladder, T* gradient)
        : f_(objective), ws_(*objective.workspace), ladder_(ladder), gradient_(gradient) {}

    double start(const T* theta) {
        f_.residual(theta, ws_.residual.data());
        return f_.value(theta, ws_.residual.data());
    }

    core::SolveRoute direction(const T* theta, T* step) {
        f_.gradient(theta, ws_.residual.data(), gradient_);
        f_.newton_matrix(ws_.residual.data(), ws_.newton_matrix.data());
        cheap_ready_ = false;
        return ladder_.solve_general(f_.d, ws_.newton_matrix.data(), gradient_, step);
    }

    // step = M^-1 g with the gradient direction() formed; M (constant over
    // the batch) formed on first use, as the reference forms it.
    core::SolveRoute majorizer_direction(const T*, T* step) {
        if (!majorizer_ready_) {
            f_.majorizer_matrix(ws_.majorizer.data());
            majorizer_ready_ = true;
        }
        cheap_ready_ = false;
        return ladder_.solve_general(f_.d, ws_.majorizer.data(), gradient_, step);
    }

    double trial(double t, const T* candidate, double value, const core::SearchSteps<T>&) {
        T* r = ws_.residual.data();
        T* rc = ws_.candidate_residual.data();
        if (t == 1.0) return exact(candidate);
        if (!cheap_ready_) {  // rc still holds the full step's residual
            T* design_step = ws_.design_step.data();
            for (std::int64_t i = 0; i < f_.rows; ++i) design_step[i] = rc[i] - r[i];
            band_ = cheap_value_band(r, rc, value);
            cheap_ready_ = true;
        }
        const T scaled = static_cast<T>(t);
        const T* design_step = ws_.design_step.data();
        for (std::int64_t i = 0; i < f_.rows; ++i) rc[i] = r[i] + scaled * design_step[i];
        const double cheap = f_.value(candidate, rc);
        if (cheap > value + band_) return cheap;  // clearly no decrease
        return exact(candidate);
    }

    double accept(double, const T*, double trial_value) {
        std::swap(ws_.residual, ws_.candidate_residual);
        return trial_value;
    }

    double norm(const T* x) const { return reference_norm(f_.d, x); }

private:
    // f(candidate) with its residual computed as the reference computes it.
    double exact(const T* candidate) {
        f_.residual(candidate, ws_.candidate_residual.data());
        return f_.value(candidate, ws_.candidate_residual.data());
    }

    // Rounding band of a cheap (O(n)) objective value: sum_i w_i |score_i|
    // |dr_i| / N with |dr_i| bounded by a few ulps of the magnitudes that
    // formed r_i.
    double cheap_value_band(const T* r, const T* r_full_step, double value) const {
        const T* w = f_.weights;
        const T* y = f_.response;
        double magnitude = 0.0;
        for (std::int64_t i = 0; i < f_.rows; ++i)
            magnitude += static_cast<double>(w[i]) *
                         (std::fabs(static_cast<double>(y[i])) + std::fabs(static_cast<double>(r[i])) +
                          std::fabs(static_cast<double>(r_full_step[i])));
        const double eps = std::numeric_limits<T>::epsilon();
        const double scale =
            std::fabs(value) + static_cast<double>(f_.tau) * magnitude / static_cast<double>(f_.weight_sum);
        return 16.0 * static_cast<double>(f_.d + 8) * eps * scale;
    }

    const SurrogateObjective<T>& f_;
    ReferenceBuffers<T>& ws_;
    SolveLadder<T>& ladder_;
    T* gradient_;
    bool cheap_ready_ = false;
    bool majorizer_ready_ = false;
    double band_ = 0.0;
};

}  // namespace rh::cpu::reference

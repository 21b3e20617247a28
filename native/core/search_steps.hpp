// The steps t a damped-Newton line search tries along theta - t step, in
// the order it tries them (ALGORITHM.md, "Unpenalized solver", and
// amendment 0002): the halving search from t = 1 while t >= kSmallestStep,
// ending at a candidate that rounds to theta; the majorizer's doubling from
// t = 2 while t <= kLargestMajorizerStep.
//
// The driver (newton_driver.hpp) walks these steps and hands them to every
// trial, so an evaluator that answers several trials in one pass over the
// rows asks `upcoming` which ones may follow instead of keeping its own
// copy of the schedule.
#pragma once

#include <cstdint>

#include "core/host_device.hpp"
#include "core/solver_rules.hpp"

namespace rh::core {

template <class T>
struct SearchSteps {
    enum class Kind { halving, doubling };

    Kind kind = Kind::halving;
    std::int64_t d = 0;
    const T* theta = nullptr;
    const T* step = nullptr;

    RH_HOST_DEVICE static SearchSteps halving(std::int64_t d, const T* theta, const T* step) {
        return {Kind::halving, d, theta, step};
    }
    RH_HOST_DEVICE static SearchSteps doubling(std::int64_t d, const T* theta, const T* step) {
        return {Kind::doubling, d, theta, step};
    }

    RH_HOST_DEVICE double first() const { return kind == Kind::halving ? 1.0 : 2.0; }
    RH_HOST_DEVICE double next(double t) const { return kind == Kind::halving ? t / 2.0 : t * 2.0; }
    RH_HOST_DEVICE bool in_range(double t) const {
        return kind == Kind::halving ? t >= kSmallestStep : t <= kLargestMajorizerStep;
    }

    // candidate = theta - t step, rounded to T as every engine rounds it;
    // true when the candidate equals theta entry for entry.
    RH_HOST_DEVICE bool form(double t, T* candidate) const {
        const T scaled = static_cast<T>(t);
        bool rounds_to_theta = true;
        for (std::int64_t j = 0; j < d; ++j) {
            candidate[j] = theta[j] - scaled * step[j];
            rounds_to_theta = rounds_to_theta && candidate[j] == theta[j];
        }
        return rounds_to_theta;
    }

    RH_HOST_DEVICE bool rounds_to_theta(double t) const {
        const T scaled = static_cast<T>(t);
        for (std::int64_t j = 0; j < d; ++j)
            if (theta[j] - scaled * step[j] != theta[j]) return false;
        return true;
    }

    // The steps from t on (t first) that the search may still try, at most
    // `most` of them, into out; their count. A halving search lists none at
    // or after a step whose candidate rounds to theta (the driver stops
    // there without a trial); the doubling search never rounds (t >= 2).
    RH_HOST_DEVICE int upcoming(double t, double* out, int most) const {
        int count = 0;
        for (double u = t; count < most && in_range(u); u = next(u)) {
            if (kind == Kind::halving && rounds_to_theta(u)) break;
            out[count++] = u;
        }
        return count;
    }
};

}  // namespace rh::core

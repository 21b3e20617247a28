// The d-sized vectors the solver drivers iterate in, owned by the engine:
// the drivers swap pointers, never allocate.
#pragma once

namespace rh::core {

template <class T>
struct DriverBuffers {
    T* theta = nullptr;
    T* candidate = nullptr;
    T* step = nullptr;      // Newton's step, LAMM's change
    T* gradient = nullptr;
    T* previous = nullptr;      // LAMM's accelerated phase: the last iterate
    T* extrapolated = nullptr;  // and the extrapolated point
};

}  // namespace rh::core

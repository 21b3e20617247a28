// The binding's side of the engines' test hooks (cpu/test_hooks.hpp): an
// UpdateGate that a test installs in an engine to hold one update at its
// inside_update point until the test opens the gate. Tests force an
// interleaving with it (another thread runs while an update is held) and
// see whether the update runs without the GIL (the gate records it).
// Nothing here is used outside tests; the names bound are underscored.
#pragma once

#include <nanobind/nanobind.h>

#include <condition_variable>
#include <mutex>

namespace rh::python {

namespace nb = nanobind;

class UpdateGate {
public:
    // Called inside an update: records the arrival and whether the calling
    // thread holds the GIL, then waits until open(). With the GIL held it
    // does not wait (the test that opens the gate could never run).
    void arrive() {
        const bool holds_gil = PyGILState_Check() != 0;
        std::unique_lock lock(mutex_);
        ++arrivals_;
        gil_held_ = gil_held_ || holds_gil;
        changed_.notify_all();
        if (!holds_gil) changed_.wait(lock, [&] { return open_; });
    }

    // Until `count` updates arrived (the GIL is released while waiting).
    void wait_arrived(int count) {
        nb::gil_scoped_release released;
        std::unique_lock lock(mutex_);
        changed_.wait(lock, [&] { return arrivals_ >= count; });
    }

    void open() {
        std::lock_guard lock(mutex_);
        open_ = true;
        changed_.notify_all();
    }

    int arrivals() {
        std::lock_guard lock(mutex_);
        return arrivals_;
    }
    bool gil_held_at_arrival() {
        std::lock_guard lock(mutex_);
        return gil_held_;
    }

private:
    std::mutex mutex_;
    std::condition_variable changed_;
    int arrivals_ = 0;
    bool gil_held_ = false;
    bool open_ = false;
};

inline void bind_update_gate(nb::module_& m) {
    nb::class_<UpdateGate>(m, "_UpdateGate")
        .def(nb::init<>())
        .def("wait_arrived", &UpdateGate::wait_arrived, nb::arg("count") = 1)
        .def("open", &UpdateGate::open)
        .def_prop_ro("arrivals", &UpdateGate::arrivals)
        .def_prop_ro("gil_held_at_arrival", &UpdateGate::gil_held_at_arrival);
}

}  // namespace rh::python

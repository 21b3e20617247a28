// Test hooks of the CPU engine: the points where a test stops an update or
// makes an allocation fail, so that an interleaving or a fault happens on
// purpose instead of by chance. Unset in production, where they cost one
// branch per update (the allocation hook lives in buffer_growth.hpp, the
// workers' in platform/worker_pool.hpp).
#pragma once

#include <functional>

namespace rh::cpu {

struct EngineTestHooks {
    // Runs once per update, after every input was checked and the BLAS pool
    // was taken for the update, before the batch is prepared: a test holds
    // an update here while other threads run.
    std::function<void()> inside_update;
};

}  // namespace rh::cpu

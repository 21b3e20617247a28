#include "cpu/platform/thread_policy.hpp"

#include <sched.h>

#include <string>
#include <thread>

#include "core/status.hpp"
#include "cpu/platform/blas_thread_lease.hpp"

namespace rh::cpu {

int available_cores() {
    cpu_set_t set;
    CPU_ZERO(&set);
    if (sched_getaffinity(0, sizeof(set), &set) == 0) {
        const int count = CPU_COUNT(&set);
        if (count > 0) return count;
    }
    const unsigned hardware = std::thread::hardware_concurrency();
    return hardware > 0 ? static_cast<int>(hardware) : 1;
}

ThreadPolicy::ThreadPolicy(int n_jobs) {
    if (n_jobs == kAllCores) {
        requested_ = available_cores();
    } else if (n_jobs == kLibraryDefaultThreads || n_jobs > 0) {
        requested_ = n_jobs;
    } else {
        throw core::EngineError(core::Status::invalid_argument,
                                "n_jobs must be None, -1, or a positive integer, got " + std::to_string(n_jobs));
    }
}

int ThreadPolicy::threads() const { return requested_ > 0 ? requested_ : library_default_threads(); }

}  // namespace rh::cpu

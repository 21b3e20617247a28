// n_jobs -> threads (NATIVE.md, "Threads"):
//   None (0 here) : the BLAS pool's size as the library/environment set it
//                   (OPENBLAS_NUM_THREADS, OMP_NUM_THREADS, threadpoolctl),
//                   read outside every engine's lease (blas_thread_lease.hpp),
//                   so another engine's update never changes it;
//   -1            : every core this process may run on (its CPU affinity);
//   k > 0         : exactly k.
// The fused loops run on the calling thread between BLAS calls, never while
// the BLAS pool works, so the process never runs more than that many
// compute threads at once. An update leases the BLAS pool at its size for
// its whole duration (cpu/platform/blas_thread_lease.hpp).
#pragma once

namespace rh::cpu {

inline constexpr int kLibraryDefaultThreads = 0;
inline constexpr int kAllCores = -1;

int available_cores();

class ThreadPolicy {
public:
    explicit ThreadPolicy(int n_jobs);

    // Threads an update will use: the explicit count or the library default.
    int threads() const;
    bool explicit_count() const noexcept { return requested_ > 0; }

private:
    int requested_ = 0;  // > 0 explicit, 0 library default
};

}  // namespace rh::cpu

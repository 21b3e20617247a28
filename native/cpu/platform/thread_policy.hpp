// n_jobs -> threads (NATIVE.md, "Threads"):
//   None (0 here) : leave the BLAS pool as the library/environment set it
//                   (OPENBLAS_NUM_THREADS, OMP_NUM_THREADS, threadpoolctl);
//   -1            : every core this process may run on (its CPU affinity);
//   k > 0         : exactly k.
// The fused loops run on the calling thread between BLAS calls, never while
// the BLAS pool works, so the process never runs more than that many
// compute threads at once.
#pragma once

namespace rh::cpu {

inline constexpr int kLibraryDefaultThreads = 0;
inline constexpr int kAllCores = -1;

int available_cores();

class ThreadPolicy {
public:
    explicit ThreadPolicy(int n_jobs);

    // Threads an update will use: the explicit count or the BLAS pool's current size.
    int threads() const;
    bool explicit_count() const noexcept { return requested_ > 0; }

    // Sets the BLAS pool for the duration of one call and restores it after.
    class Scope {
    public:
        explicit Scope(const ThreadPolicy& policy);
        ~Scope();
        Scope(const Scope&) = delete;
        Scope& operator=(const Scope&) = delete;

    private:
        int previous_ = 0;
    };

private:
    int requested_ = 0;  // > 0 explicit, 0 library default
};

// Sets the BLAS pool to exactly `threads` for one call and restores it after
// (the fast path runs BLAS single-threaded and splits rows on its own pool).
class BlasThreadsScope {
public:
    explicit BlasThreadsScope(int threads);
    ~BlasThreadsScope();
    BlasThreadsScope(const BlasThreadsScope&) = delete;
    BlasThreadsScope& operator=(const BlasThreadsScope&) = delete;

private:
    int previous_ = 0;
};

}  // namespace rh::cpu

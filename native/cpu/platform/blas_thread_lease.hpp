// The BLAS pool's size is one setting for the whole process, while engines
// on different threads need it at different sizes (the fast path at 1, the
// reference order at n_jobs), and OpenBLAS's results depend on it: dot,
// gemv and gemm split their sums by thread count (measured on
// scipy-openblas32, docs/native-cpu.md "Threads"). An engine used to set the
// pool for its update and restore it afterwards; beside another engine, it
// read or ran at the other one's size, and two overlapping save/restore
// pairs could leave the pool at the wrong size for good.
//
// A lease sets the pool to a size for the whole of one engine call.
// Leases of the same size share the pool; one of another size waits until
// the pool is free. Requests are admitted in arrival order, so a waiting
// request is never overtaken by later ones of the size in use. When the last
// lease ends the pool is set back to the size it had before the first one
// (the library default, or what threadpoolctl set), and while leases are
// held, library_default_threads() reports that size, not the leased one.
#pragma once

namespace rh::cpu {

// The BLAS pool's size outside every lease: what n_jobs=None means.
int library_default_threads();

class BlasThreadLease {
public:
    explicit BlasThreadLease(int threads);  // threads >= 1
    ~BlasThreadLease();
    BlasThreadLease(const BlasThreadLease&) = delete;
    BlasThreadLease& operator=(const BlasThreadLease&) = delete;
};

}  // namespace rh::cpu

#include "cpu/platform/blas_thread_lease.hpp"

#include <algorithm>
#include <condition_variable>
#include <cstdint>
#include <mutex>

#include "cpu/platform/blas_provider.hpp"

namespace rh::cpu {

namespace {

struct Pool {
    std::mutex mutex;
    std::condition_variable changed;
    int holders = 0;   // leases held now
    int leased = 0;    // their size
    int outside = 0;   // the size before the first of them
    std::uint64_t next_ticket = 0, admitted = 0;
};

Pool& pool() {
    static Pool instance;  // never destroyed before the engines that use it (function-local static)
    return instance;
}

}  // namespace

int library_default_threads() {
    Pool& p = pool();
    std::lock_guard lock(p.mutex);
    return p.holders > 0 ? p.outside : blas::get_num_threads();
}

BlasThreadLease::BlasThreadLease(int threads) {
    threads = std::max(threads, 1);
    Pool& p = pool();
    std::unique_lock lock(p.mutex);
    const std::uint64_t ticket = p.next_ticket++;
    p.changed.wait(lock, [&] { return ticket == p.admitted && (p.holders == 0 || p.leased == threads); });
    if (p.holders == 0) {
        p.outside = blas::get_num_threads();
        if (p.outside != threads) blas::set_num_threads(threads);
        p.leased = threads;
    }
    ++p.holders;
    ++p.admitted;
    p.changed.notify_all();  // the next request may share the pool
}

BlasThreadLease::~BlasThreadLease() {
    Pool& p = pool();
    std::lock_guard lock(p.mutex);
    if (--p.holders == 0) {
        if (p.outside != p.leased) blas::set_num_threads(p.outside);
        p.changed.notify_all();
    }
}

}  // namespace rh::cpu

// Resources that are slow to make and cheap to keep (update_batches' pinned
// staging ring: pinning host memory costs about 0.4 ms per MB; the engines'
// cuBLAS/cuSOLVER handles, device_context.cuh), made once and lent again:
// acquire() hands out an idle one (the one given back last) or makes one,
// and the lease gives it back when it ends. Users at the same time get one
// each; the pool keeps at most `max_idle` of those given back (the rest are
// destroyed), and a lease whose resource went bad discards it. Plain C++:
// the CPU tests run it.
#pragma once

#include <functional>
#include <memory>
#include <mutex>
#include <utility>
#include <vector>

namespace rh::cuda {

template <class Resource>
class ReusePool {
public:
    explicit ReusePool(std::size_t max_idle = static_cast<std::size_t>(-1)) : max_idle_(max_idle) {}

    class Lease {
    public:
        Lease() = default;
        Lease(ReusePool* pool, std::unique_ptr<Resource> resource) : pool_(pool), resource_(std::move(resource)) {}
        ~Lease() { give_back(); }
        Lease(Lease&& other) noexcept : pool_(other.pool_), resource_(std::move(other.resource_)) {}
        Lease& operator=(Lease&& other) noexcept {
            if (this != &other) {
                give_back();
                pool_ = other.pool_;
                resource_ = std::move(other.resource_);
            }
            return *this;
        }
        // Destroys the resource instead of giving it back (it may be broken).
        void discard() noexcept { resource_.reset(); }
        Resource& operator*() const noexcept { return *resource_; }
        Resource* operator->() const noexcept { return resource_.get(); }
        explicit operator bool() const noexcept { return resource_ != nullptr; }

    private:
        void give_back() noexcept {
            if (resource_) pool_->give_back(std::move(resource_));
        }
        ReusePool* pool_ = nullptr;
        std::unique_ptr<Resource> resource_;
    };

    // An idle resource, else make() (outside the pool's lock; its failure
    // propagates and the pool is unchanged). The pool must outlive the lease.
    Lease acquire(const std::function<std::unique_ptr<Resource>()>& make) {
        {
            std::lock_guard<std::mutex> lock(mutex_);
            if (!idle_.empty()) {
                std::unique_ptr<Resource> resource = std::move(idle_.back());
                idle_.pop_back();
                return Lease(this, std::move(resource));
            }
        }
        return Lease(this, make());
    }

    std::size_t idle() const {
        std::lock_guard<std::mutex> lock(mutex_);
        return idle_.size();
    }

private:
    void give_back(std::unique_ptr<Resource> resource) noexcept {
        {
            std::lock_guard<std::mutex> lock(mutex_);
            if (idle_.size() < max_idle_) {
                try {
                    idle_.push_back(std::move(resource));
                } catch (...) {  // no room to keep it: it is let go (below)
                }
            }
        }
        resource.reset();  // not kept: destroyed outside the lock
    }

    const std::size_t max_idle_;
    mutable std::mutex mutex_;
    std::vector<std::unique_ptr<Resource>> idle_;
};

}  // namespace rh::cuda

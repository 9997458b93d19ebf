#pragma once
// The device lock: one per device, held for every decision, as PyTorch's mutex is. Its seam is
// two calls. lock_or_delegate takes the lock or, when another thread holds it, hands the
// operation to the holder (combining_lock.hpp), which makes it before releasing when the cache
// alone can serve it; otherwise the thread takes the lock and makes the whole operation itself.
// unlock_and_serve ends a hold: the holder first makes the operations handed to it. A holder
// serves only after an operation of its own, when its decision is complete, so with one thread
// the decisions are the lock's. It is also a plain lock (BasicLockable) for everything else.

#include <cstdint>
#include <exception>
#include <mutex>

#include "detail/combining_lock.hpp"
#include "detail/reentrant_mutex.hpp"
#include "memtrail/core/allocator_config.hpp"
#include "memtrail/core/device.hpp"

namespace memtrail::detail {

struct block;

// An allocation or a free handed to the lock's holder, copied into a slot of one cache line:
// the two one-byte fields come first to keep it in 56 bytes, and what the holder throws goes to
// the requester's own exception_ptr, so that the record is plain words to copy. No initializers:
// the uncontended path declares one and never fills it.
struct delegated_op {
    enum class kind : uint8_t { malloc, free };
    kind what;
    // Set by the holder: whether it made the whole operation (else it leaves the operation to
    // the requester, having changed nothing).
    bool made;
    union {
        uint64_t size;  // malloc: the requested size
        block* b;       // free: the block freed (nullptr: the address is not allocated here)
    };
    stream_handle stream;  // malloc
    context_handle context;
    device_address address;     // free: the address to free. malloc: the address allocated
    uint64_t caller;            // the observer's word for the requester's thread (allocator_event)
    std::exception_ptr* error;  // where the holder puts what it threw
};

class device_lock {
  public:
    explicit device_lock(const device_lock_options& options)
        : mutex_(options.biased ? reentrant_mutex::default_bias_after
                                : reentrant_mutex::never_biased),
          combiner_(mutex_) {}
    device_lock(const device_lock&) = delete;
    device_lock& operator=(const device_lock&) = delete;

    // acquired: this thread holds the lock; it makes its operation, then unlock_and_serve.
    // reentered: it held the lock already and holds it once more; it makes its operation and
    // unlocks without serving (it is inside a decision of its own). delegated: the holder made
    // the operation, whose result is in `op`; the lock is not held.
    enum class entry { acquired, reentered, delegated };

    // `fill(op)` writes the operation into `op`, only when the lock is busy (the record costs a
    // tenth of a cached allocation to build). Rethrows what the holder threw making it.
    template <typename Fill>
    [[gnu::always_inline]] entry lock_or_delegate(delegated_op& op, Fill&& fill) {
        switch (mutex_.try_lock()) {
            case reentrant_mutex::try_result::acquired:
                return entry::acquired;
            case reentrant_mutex::try_result::reentered:
                return entry::reentered;
            case reentrant_mutex::try_result::busy:
                break;
        }
        fill(op);
        return delegate(op);
    }

    // Ends a hold that lock_or_delegate began: an acquired one makes the waiters' operations
    // with `make(op)` (which returns whether it made it; what it throws goes to the waiter), then
    // unlocks.
    template <typename Make>
    [[gnu::always_inline]] void unlock_and_serve(entry held, Make&& make) {
        if (held == entry::acquired) {
            combiner_.serve_waiters([&make](delegated_op& op) noexcept {
                try {
                    op.made = make(op);
                } catch (...) {
                    op.made = false;
                    *op.error = std::current_exception();
                }
            });
        }
        mutex_.unlock();
    }

    void lock() { mutex_.lock(); }
    void unlock() { mutex_.unlock(); }

  private:
    // The busy path: waits for the holder to make `op`, or takes the lock to make it here.
    [[gnu::noinline]] entry delegate(delegated_op& op) {
        std::exception_ptr thrown;
        op.error = &thrown;
        op.made = false;
        if (combiner_.when_busy(op) != combining_lock<delegated_op>::entry::delegated) {
            return entry::acquired;
        }
        if (thrown) [[unlikely]] {
            std::rethrow_exception(thrown);
        }
        if (op.made) {
            return entry::delegated;
        }
        mutex_.lock();
        return entry::acquired;
    }

    reentrant_mutex mutex_;
    combining_lock<delegated_op> combiner_;
};

}  // namespace memtrail::detail

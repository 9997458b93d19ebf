// The allocation and free entry points: each takes the device lock, or hands its operation to the
// lock's holder (combining_lock.hpp), which makes it when it can be made from the cache alone
// (malloc_cached, free_at_once) and otherwise leaves it to the requester, who then takes the lock
// and makes the whole operation itself. A holder serves the waiters only after an operation of
// its own, when its decision is complete, so with one thread the decisions are the lock's.

#include "detail/device_allocator_impl.hpp"

namespace memtrail::detail {

using combiner_entry = combining_lock<delegated_op>::entry;

namespace {
// Whether the lock's holder made `op` (what it threw is thrown here); when it did not, this
// thread takes the lock, to make the whole operation itself.
bool made_by_holder(combiner_entry entry, const delegated_op& op, reentrant_mutex& mutex) {
    if (entry != combiner_entry::delegated) {
        return false;
    }
    if (*op.error) [[unlikely]] {
        std::rethrow_exception(*op.error);
    }
    if (op.made) {
        return true;
    }
    mutex.lock();
    return false;
}
}  // namespace

// The operation made on the lock, which this thread holds (once more, when reentered).
inline block* device_allocator_impl::malloc_entered(bool reentered, uint64_t orig_size,
                                                    stream_handle stream, context_handle context) {
    std::unique_lock<reentrant_mutex> lock(mutex, std::adopt_lock);
    block* b = malloc_locked(orig_size, stream, context, lock);
    if (!reentered) {
        serve_waiters();
    }
    return b;
}

// The uncontended path builds no delegated_op: the lock is free (or this thread's) on almost
// every call, and the record and its checks cost a tenth of a cached allocation.
device_address device_allocator_impl::malloc(uint64_t orig_size, stream_handle stream,
                                     context_handle context) {
    const reentrant_mutex::try_result first = mutex.try_lock();
    if (first == reentrant_mutex::try_result::busy) [[unlikely]] {
        return malloc_when_busy(orig_size, stream, context);
    }
    return malloc_entered(first == reentrant_mutex::try_result::reentered, orig_size, stream,
                          context)
        ->ptr;
}

device_address device_allocator_impl::malloc_when_busy(uint64_t orig_size, stream_handle stream,
                                               context_handle context) {
    std::exception_ptr thrown;
    delegated_op op{.what = delegated_op::kind::malloc,
                    .made = false,
                    .size = orig_size,
                    .stream = stream,
                    .context = context,
                    .address = 0,
                    .b = nullptr,
                    .error = &thrown};
    if (made_by_holder(combiner.when_busy(op), op, mutex)) {
        return op.address;
    }
    return malloc_entered(false, orig_size, stream, context)->ptr;
}

// The free made on the lock, which this thread holds (once more, when reentered).
inline block* device_allocator_impl::free_entered(bool reentered, device_address address,
                                                  block* taken, context_handle context) {
    std::lock_guard<reentrant_mutex> lock(mutex, std::adopt_lock);
    if (taken != nullptr) [[unlikely]] {
        std::erase(handed_back_, taken);
    }
    block* b = taken != nullptr ? taken : allocated.take(address);
    if (b != nullptr) [[likely]] {
        free_locked(b, context);
    }
    if (!reentered) {
        serve_waiters();
    }
    return b;
}

block* device_allocator_impl::free(device_address address, context_handle context) {
    const reentrant_mutex::try_result first = mutex.try_lock();
    if (first == reentrant_mutex::try_result::busy) [[unlikely]] {
        return free_when_busy(address, context);
    }
    return free_entered(first == reentrant_mutex::try_result::reentered, address, nullptr, context);
}

block* device_allocator_impl::free_when_busy(device_address address, context_handle context) {
    std::exception_ptr thrown;
    delegated_op op{.what = delegated_op::kind::free,
                    .made = false,
                    .size = 0,
                    .stream = 0,
                    .context = context,
                    .address = address,
                    .b = nullptr,
                    .error = &thrown};
    if (made_by_holder(combiner.when_busy(op), op, mutex)) {
        return op.b;
    }
    return free_entered(false, address, op.b, context);
}

void device_allocator_impl::run_delegated(delegated_op& op) noexcept {
    try {
        if (op.what == delegated_op::kind::malloc) {
            const block* b = malloc_cached(op.size, op.stream, op.context);
            op.made = b != nullptr;
            if (op.made) {
                op.address = b->ptr;
            }
        } else {
            // Unknown to the map: made, the requester reports it.
            op.b = allocated.take(op.address);
            op.made = op.b == nullptr || free_at_once(op.b, op.context);
            if (!op.made) {
                handed_back_.push_back(op.b);
            }
        }
    } catch (...) {
        *op.error = std::current_exception();
    }
}

}  // namespace memtrail::detail

// The allocation and free entry points: each takes the device lock, or hands its operation to the
// lock's holder (combining_lock.hpp), which makes it when it can be made from the cache alone
// (malloc_cached, free_at_once) and otherwise leaves it to the requester, who then takes the lock
// and makes the whole operation itself. A holder serves the waiters only after an operation of
// its own, when its decision is complete, so with one thread the decisions are the lock's.

#include <cstdlib>
#include <string_view>

#include "detail/device_allocator_impl.hpp"

namespace memtrail::detail {

bool delegation_from_environment() {
    const char* text = std::getenv("MEMTRAIL_DEVICE_LOCK");
    const std::string_view lock = text ? text : "combining";
    if (lock != "spinning" && lock != "combining") {
        throw usage_error("memtrail: MEMTRAIL_DEVICE_LOCK=" + std::string(lock) +
                          " is not a device lock; accepted: combining (the default) or spinning");
    }
    return lock == "combining";
}

using combiner_entry = combining_lock<delegated_op>::entry;

namespace {
// Whether the lock's holder made `op` (what it threw is thrown here); when it did not, this
// thread takes the lock, to make the whole operation itself.
bool made_by_holder(combiner_entry entry, const delegated_op& op, reentrant_mutex& mutex) {
    if (entry != combiner_entry::delegated) {
        return false;
    }
    if (op.error) [[unlikely]] {
        std::rethrow_exception(op.error);
    }
    if (op.made) {
        return true;
    }
    mutex.lock();
    return false;
}
}  // namespace

block* device_allocator_impl::malloc(uint64_t orig_size, stream_handle stream,
                                     context_handle context) {
    delegated_op op{.what = delegated_op::kind::malloc,
                    .size = orig_size,
                    .stream = stream,
                    .context = context,
                    .b = nullptr,
                    .made = false,
                    .error = {}};
    const combiner_entry entry = combiner.lock_or_delegate(op);
    if (made_by_holder(entry, op, mutex)) {
        return op.b;
    }
    std::unique_lock<reentrant_mutex> lock(mutex, std::adopt_lock);
    block* b = malloc_locked(orig_size, stream, context, lock);
    if (entry != combiner_entry::reentered) {
        serve_waiters();
    }
    return b;
}

void device_allocator_impl::free(block* b, context_handle context) {
    delegated_op op{.what = delegated_op::kind::free,
                    .size = 0,
                    .stream = 0,
                    .context = context,
                    .b = b,
                    .made = false,
                    .error = {}};
    const combiner_entry entry = combiner.lock_or_delegate(op);
    if (made_by_holder(entry, op, mutex)) {
        return;
    }
    std::lock_guard<reentrant_mutex> lock(mutex, std::adopt_lock);
    free_locked(b, context);
    if (entry != combiner_entry::reentered) {
        serve_waiters();
    }
}

void device_allocator_impl::serve_waiters() {
    combiner.serve_waiters([this](delegated_op& op) { run_delegated(op); });
}

void device_allocator_impl::run_delegated(delegated_op& op) noexcept {
    try {
        if (op.what == delegated_op::kind::malloc) {
            op.b = malloc_cached(op.size, op.stream, op.context);
            op.made = op.b != nullptr;
        } else {
            op.made = free_at_once(op.b, op.context);
        }
    } catch (...) {
        op.error = std::current_exception();
    }
}

}  // namespace memtrail::detail

// The allocation path, in PyTorch's order: recycle finished cross-stream frees, round the size,
// best-fit search in the stream's pool, free-memory callbacks, garbage collection, a new device
// allocation, release of cached oversize blocks, release of the whole cache and one retry; then
// the host runtime's last full collection and the same once more; OOM.

#include <sstream>

#include "detail/device_allocator_impl.hpp"

namespace memtrail::detail {

device_address device_allocator_impl::malloc(uint64_t orig_size, stream_handle stream,
                                             context_handle context) {
    delegated_op op;
    const device_lock::entry held = mutex.lock_or_delegate(op, [&](delegated_op& asked) {
        asked.what = delegated_op::kind::malloc;
        asked.size = orig_size;
        asked.stream = stream;
        asked.context = context;
        asked.caller = caller_word();
    });
    if (held == device_lock::entry::delegated) {
        return op.address;
    }
    std::unique_lock<device_lock> lock(mutex, std::adopt_lock);
    const device_address address = malloc_locked(orig_size, stream, context, lock)->ptr;
    lock.release();
    unlock_and_serve(held);
    return address;
}

block* device_allocator_impl::malloc_locked(uint64_t orig_size, stream_handle stream,
                                            context_handle context,
                                            std::unique_lock<device_lock>& lock) {
    // Event queries are illegal while a CUDA graph captures: cross-stream frees wait until no
    // pool is being allocated to.
    if (captures_underway_.empty() &&
        (!stream_events_.empty() || !deferred_until_no_capture_.empty())) {
        process_events_locked(context);
    }
    alloc_params p = params_for(orig_size, stream);
    bool found = get_free_block(p) || (trigger_free_memory_callbacks() && get_free_block(p));
    found = found || find_or_make_block(p, context, lock);
    // The host's garbage collector gets one last chance before the allocation fails, so an
    // allocation fails, is counted and observed (a dump written) once, and not at all when the
    // collection frees enough (num_ooms counts the errors thrown, as PyTorch's).
    if (!found && !free_memory_callbacks.empty() &&
        run_free_memory_callbacks(memory_pressure::full)) [[unlikely]] {
        p = params_for(orig_size, stream);
        found = get_free_block(p) || find_or_make_block(p, context, lock);
    }
    if (!found) {
        raise_out_of_memory(p, context, lock);
    }
    const bool split = should_split(p.found, p.size());
    return alloc_found_block(p, orig_size, context, split);
}

// After the cached blocks: a new segment, made room for by releasing cached memory if need be,
// else a free block of a pool marked use_on_oom.
bool device_allocator_impl::find_or_make_block(alloc_params& p, context_handle context,
                                               std::unique_lock<device_lock>& lock) {
    if (set_fraction_ && config.garbage_collection_threshold > 0.0) [[unlikely]] {
        garbage_collect_cached_blocks(context);
    }
    // During a capture the cache is not flushed: that would synchronize the device.
    bool found =
        alloc_block(p, false, context, lock) ||
        (release_available_cached_blocks(p, context) && alloc_block(p, false, context, lock)) ||
        (captures_underway_.empty() && release_cached_blocks(context, pool_id{}) &&
         alloc_block(p, true, context, lock));
    if (!found && p.out_of_memory && !use_on_oom_pools_.empty()) [[unlikely]] {
        found = try_use_on_oom_pools(p);
    }
    return found;
}

// malloc_locked's path when nothing precedes its search and the search finds a block: the rest
// is the waiter's own to make. Pending cross-stream events are queried on the calling thread's
// current device; a private pool's filter may look at the calling thread; a failed search with
// garbage collection on would advance its clock twice.
bool device_allocator_impl::malloc_for_waiter(delegated_op& op) {
    if (!captures_underway_.empty() || !stream_events_.empty() ||
        !deferred_until_no_capture_.empty() ||
        (set_fraction_ && config.garbage_collection_threshold > 0.0)) {
        return false;
    }
    alloc_params p = params_for(op.size, op.stream);
    if (!get_free_block(p)) {
        return false;
    }
    op.address = alloc_found_block(p, op.size, op.context, should_split(p.found, p.size()))->ptr;
    return true;
}

bool device_allocator_impl::get_free_block(alloc_params& p) {
    block_pool& pool = *p.pool;
    if (set_fraction_ && config.garbage_collection_threshold > 0.0) [[unlikely]] {
        ++pool.get_free_blocks_call_count;  // the clock garbage collection ages blocks by
    }
    auto it = pool.blocks.lower_bound(p.search_key);
    if (it == pool.blocks.end() || (*it)->stream != p.stream()) {
        return false;
    }
    if ((*it)->expandable) {
        if (config.expandable_segments) {
            // A free block followed by unmapped space can grow: judge it by what it can become.
            auto expandable_size = [](const block* b) {
                return b->size + (b->next && !b->next->mapped ? b->next->size : 0);
            };
            auto next = std::next(it);
            while ((*it)->expandable && next != pool.blocks.end() &&
                   (*next)->stream == p.stream() && expandable_size(*next) < expandable_size(*it)) {
                it = next++;
            }
        } else {
            // Expandable segments were switched off after some were made: skip their blocks.
            do {
                ++it;
            } while (it != pool.blocks.end() && (*it)->expandable && (*it)->stream == p.stream());
            if (it == pool.blocks.end() || (*it)->stream != p.stream()) {
                return false;
            }
        }
    }
    // Never hand an oversize block to a request that is not oversize itself...
    if (!is_oversize(p.size()) && is_oversize((*it)->size)) {
        return false;
    }
    // ...and an oversize request only a block at most max_non_split_rounding_size larger.
    if (is_oversize(p.size()) && (*it)->size >= p.size() + config.max_non_split_rounding_size) {
        return false;
    }
    p.found = *it;
    pool.blocks.erase(it);
    return true;
}

bool device_allocator_impl::trigger_free_memory_callbacks() {
    if (free_memory_callbacks.empty()) {
        return false;
    }
    // Pick how hard the host runtime should collect from how full the device is.
    const memory_info info = dev.get_memory_info();
    const double total = static_cast<double>(info.total ? info.total : 1);
    const double reserved = static_cast<double>(stats_.reserved_bytes[0].current);
    const double allocated_now = static_cast<double>(stats_.allocated_bytes[0].current);
    if (reserved / total < config.callback_reserved_rate) {
        return false;  // plenty of room: a collection would cost more than it saves
    }
    const memory_pressure pressure =
        (allocated_now / total >= config.callback_allocated_rate ||
         (reserved > 0 && allocated_now / reserved >= config.callback_allocated_reserved_rate))
            ? memory_pressure::full
            : memory_pressure::light;
    return run_free_memory_callbacks(pressure);
}

bool device_allocator_impl::run_free_memory_callbacks(memory_pressure pressure) {
    // The callbacks run without the device's lock: a host runtime's collector takes its own
    // lock first (Python's GIL), and a thread that holds that one while it frees here would
    // wait for this thread while this thread waits for it. A copy, since the list may change
    // meanwhile; get_free_block searches again after.
    const std::vector<free_memory_callback> callbacks = free_memory_callbacks;
    mutex.unlock();
    bool freed = false;
    try {
        for (const auto& callback : callbacks) {
            freed |= callback(device_index_, pressure);
        }
    } catch (...) {
        mutex.lock();
        throw;
    }
    mutex.lock();
    return freed;
}

bool device_allocator_impl::alloc_block(alloc_params& p, bool is_retry, context_handle context,
                                        std::unique_lock<device_lock>& lock) {
    const uint64_t size = p.alloc_size;
    if (is_retry) {
        stats_.num_alloc_retries += 1;
    }
    if (set_fraction_ && total_allocated_memory_ + size > allowed_memory_maximum_) {
        p.out_of_memory = true;
        return false;
    }
    if (config.expandable_segments) {
        p.found = try_allocate_expandable_block(p.stream(), *p.pool, p.size(), context);
        p.out_of_memory = p.found == nullptr;
        if (p.found && p.pool->owner) {
            p.pool->owner->device_malloc_count++;
        }
        return p.found != nullptr;
    }
    device_address ptr = 0;
    device_status status;
    if (config.release_lock_on_device_malloc) {
        lock.unlock();
        try {
            status = dev.allocate(size, ptr);
        } catch (...) {
            lock.lock();
            throw;
        }
        lock.lock();
    } else {
        status = dev.allocate(size, ptr);
    }
    if (status != device_status::ok) {
        p.out_of_memory = true;
        return false;
    }
    if (p.pool->owner) {
        p.pool->owner->device_malloc_count++;
    }
    total_allocated_memory_ += size;
    p.found = arena_.make(p.stream(), size, p.pool, ptr);
    for_pool_stats(stats_.segment, *p.pool, [](stat& s) { s.increase(1); });
    for_pool_stats(stats_.reserved_bytes, *p.pool, [size](stat& s) { s.increase(size); });
    if (is_oversize(size)) {
        stats_.oversize_segments.increase(1);
    }
    stats_.num_device_alloc++;
    record(allocator_action::segment_alloc, ptr, size, size, p.stream(), context, p.pool);
    p.found->context_when_segment_allocated = context;
    return true;
}

block* device_allocator_impl::alloc_found_block(alloc_params& p, uint64_t orig_size,
                                                context_handle context, bool split_remainder) {
    const uint64_t size = p.size();
    block_pool& pool = *p.pool;
    block* b = p.found;
    const bool already_split = b->is_split();
    if (split_remainder) {
        // The request takes the front of the block; the remainder stays free.
        block* remaining = b;
        b = arena_.make(p.stream(), size, &pool, remaining->ptr);
        b->expandable = remaining->expandable;
        b->prev = remaining->prev;
        if (b->prev) {
            b->prev->next = b;
        }
        b->next = remaining;
        remaining->prev = b;
        remaining->ptr += size;
        remaining->size -= size;
        pool.insert_into_blocks(remaining);
        if (!b->expandable) {
            if (already_split) {
                // An inactive split block shrinks by `size`.
                for_pool_stats(stats_.inactive_split_bytes, pool,
                               [size](stat& s) { s.decrease(size); });
            } else {
                // A new inactive split block appears.
                const uint64_t rest = remaining->size;
                for_pool_stats(stats_.inactive_split_bytes, pool,
                               [rest](stat& s) { s.increase(rest); });
                for_pool_stats(stats_.inactive_split, pool, [](stat& s) { s.increase(1); });
            }
        }
    } else if (already_split && !b->expandable) {
        const uint64_t whole = b->size;
        for_pool_stats(stats_.inactive_split_bytes, pool, [whole](stat& s) { s.decrease(whole); });
        for_pool_stats(stats_.inactive_split, pool, [](stat& s) { s.decrease(1); });
    }

    b->allocated = true;
    b->requested_size = orig_size;
    b->context_when_allocated = context;
    record(allocator_action::alloc, b->ptr, orig_size, b->size, b->stream, context, &pool);
    allocated.insert(b->ptr, b);

    const uint64_t block_size = b->size;
    for_pool_stats(stats_.allocation, pool, [](stat& s) { s.increase(1); });
    for_pool_stats(stats_.allocated_bytes, pool, [block_size](stat& s) { s.increase(block_size); });
    if (pending_blocks_[static_cast<size_t>(stat_type::aggregate)].current != 0) [[unlikely]] {
        note_active_peaks(pool);  // active rises with allocation, from above it
    }
    for_pool_stats(stats_.requested_bytes, pool, [orig_size](stat& s) { s.increase(orig_size); });
    if (is_oversize(block_size)) {
        stats_.oversize_allocations.increase(1);
    }
    return b;
}

void device_allocator_impl::note_active_peaks(const block_pool& pool) {
    for (const stat_type type : {stat_type::aggregate, pool_stat_type(pool.is_small)}) {
        const auto i = static_cast<size_t>(type);
        pending_blocks_[i].active_peak =
            std::max(pending_blocks_[i].active_peak,
                     stats_.allocation[i].current + pending_blocks_[i].current);
        pending_bytes_[i].active_peak =
            std::max(pending_bytes_[i].active_peak,
                     stats_.allocated_bytes[i].current + pending_bytes_[i].current);
    }
}

// The last resort before an OOM: a free block of a pool marked use_on_oom, searched as if the
// allocation were made to that pool (only for allocations not already made to a pool).
bool device_allocator_impl::try_use_on_oom_pools(alloc_params& p) {
    if (p.pool->owner) {
        return false;
    }
    for (const pool_id& id : use_on_oom_pools_) {
        private_pool* pool = find_pool(id);
        if (!pool) {
            continue;
        }
        alloc_params in_pool = p;
        in_pool.pool =
            size_rules::is_small_request(p.size()) ? &pool->small_blocks : &pool->large_blocks;
        in_pool.found = nullptr;
        if (get_free_block(in_pool)) {
            in_pool.out_of_memory = false;
            p = in_pool;
            return true;
        }
    }
    return false;
}

void device_allocator_impl::raise_out_of_memory(alloc_params& p, context_handle context,
                                                std::unique_lock<device_lock>& lock) {
    const memory_info info = dev.get_memory_info();
    record(allocator_action::oom, info.free, p.size(), p.size(), p.stream(), context, p.pool);
    stats_.num_ooms += 1;
    // PyTorch counts the free cached blocks of private pools as allocated (they cannot serve
    // this request) and says so.
    const uint64_t in_private_pools = free_bytes_in_private_pools();
    const int64_t allocated_bytes =
        stats_.allocated_bytes[0].current + static_cast<int64_t>(in_private_pools);
    const int64_t reserved = stats_.reserved_bytes[0].current;
    const auto observers = oom_observers;
    const uint64_t allowed = allowed_memory_maximum_;
    const bool fraction_set = set_fraction_;
    // Observers may take other locks (a Python GIL, a file): call them without ours.
    lock.unlock();
    for (const auto& observe : observers) {
        observe(device_index_, p.alloc_size, fraction_set ? allowed : info.total, info.free);
    }
    std::ostringstream message;
    message << "memtrail: out of memory. Tried to allocate " << format_size(p.alloc_size)
            << " (request rounded to " << format_size(p.size()) << "). Device " << device_index_
            << " has a total capacity of " << format_size(info.total) << " of which "
            << format_size(info.free) << " is free. ";
    if (fraction_set) {
        message << format_size(allowed) << " allowed; ";
    }
    message << "Of the allocated memory " << format_size(static_cast<uint64_t>(allocated_bytes))
            << " is allocated by memtrail, ";
    if (in_private_pools > 0) {
        message << "with " << format_size(in_private_pools)
                << " allocated in private pools (e.g., CUDA Graphs), ";
    }
    message << "and " << format_size(static_cast<uint64_t>(reserved - allocated_bytes))
            << " is reserved by memtrail but unallocated. If reserved but unallocated memory is "
               "large try setting MEMTRAIL_ALLOC_CONF=expandable_segments:True to avoid "
               "fragmentation.";
    throw out_of_memory_error(message.str(), device_index_, p.size(), info.free, info.total);
}

}  // namespace memtrail::detail

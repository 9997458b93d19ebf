// Frees: a block used only on its own stream returns to its pool at once and merges with free
// neighbours; one used on other streams (record_stream) waits for events recorded on those
// streams, checked at the next allocation (free_requested, later free_completed).

#include "detail/device_allocator_impl.hpp"

namespace memtrail::detail {

block* device_allocator_impl::free(device_address address, context_handle context) {
    delegated_op op;
    const device_lock::entry held = mutex.lock_or_delegate(op, [&](delegated_op& asked) {
        asked.what = delegated_op::kind::free;
        asked.context = context;
        asked.address = address;
        asked.caller = caller_word();
    });
    if (held == device_lock::entry::delegated) {
        return op.b;
    }
    std::unique_lock<device_lock> lock(mutex, std::adopt_lock);
    block* b = allocated.take(address);
    if (b != nullptr) [[likely]] {
        free_locked(b, context);
    }
    lock.release();
    unlock_and_serve(held);
    return b;
}

void device_allocator_impl::free_locked(block* b, context_handle context) {
    b->allocated = false;
    const uint64_t block_size = b->size;
    for_pool_stats(stats_.allocation, *b->pool, [](stat& s) { s.decrease(1); });
    for_pool_stats(stats_.allocated_bytes, *b->pool,
                   [block_size](stat& s) { s.decrease(block_size); });
    record(allocator_action::free_requested, b->ptr, b->requested_size, b->size, b->stream,
           context ? context : b->context_when_allocated, b->pool);
    if (is_oversize(block_size)) {
        stats_.oversize_allocations.decrease(1);
    }
    if (!b->stream_uses.empty()) {
        // Active until its events complete: allocation fell, active did not.
        add_pending(*b->pool, 1, static_cast<int64_t>(block_size));
        if (!captures_underway_.empty()) [[unlikely]] {
            // Recording an event to query later is illegal during a capture.
            deferred_until_no_capture_.push_back(b);
        } else {
            insert_events(b);
        }
    } else {
        free_block(b, context);
    }
}

// A free of an address not allocated here (the waiter reports it), or of a block used only on its
// own stream: one used on others records events on the calling thread's current device.
bool device_allocator_impl::free_for_waiter(delegated_op& op) {
    const block* found = allocated.find(op.address);
    if (found != nullptr && !found->stream_uses.empty()) {
        return false;
    }
    op.b = found != nullptr ? allocated.take(op.address) : nullptr;
    if (op.b != nullptr) {
        free_locked(op.b, op.context);
    }
    return true;
}

bool device_allocator_impl::record_stream(device_address address, stream_handle stream) {
    std::lock_guard<device_lock> lock(mutex);
    block* b = allocated.find(address);
    if (b == nullptr) {
        return false;
    }
    if (stream == b->stream) {
        return true;  // uses on the allocation stream need no synchronization
    }
    b->add_stream_use(stream);
    if (!captures_underway_.empty()) [[unlikely]] {
        capture_stream_uses_[b].push_back(stream);
    }
    return true;
}

void device_allocator_impl::free_block(block* b, context_handle context) {
    record(allocator_action::free_completed, b->ptr, b->requested_size, b->size, b->stream,
           context ? context : b->context_when_allocated, b->pool);
    b->context_when_allocated = 0;
    const uint64_t requested = b->requested_size;
    block_pool& pool = *b->pool;
    int64_t net_inactive_split_blocks = 0;
    int64_t net_inactive_split_bytes = 0;
    auto merge = [&](block* candidate) {
        const uint64_t subsumed = try_merge_blocks(b, candidate, pool);
        if (subsumed > 0) {
            net_inactive_split_blocks -= 1;
            net_inactive_split_bytes -= static_cast<int64_t>(subsumed);
        }
    };
    merge(b->prev);
    merge(b->next);
    pool.insert_into_blocks(b);
    if (b->is_split()) {
        net_inactive_split_blocks += 1;
        net_inactive_split_bytes += static_cast<int64_t>(b->size);
    }
    auto apply = [](stat& s, int64_t delta) {
        if (delta > 0) {
            s.increase(static_cast<uint64_t>(delta));
        } else if (delta < 0) {
            s.decrease(static_cast<uint64_t>(-delta));
        }
    };
    // Fully free pages of expandable segments can always be released, so PyTorch keeps them
    // out of inactive_split.
    if (!b->expandable) {
        for_pool_stats(stats_.inactive_split, pool,
                       [&](stat& s) { apply(s, net_inactive_split_blocks); });
        for_pool_stats(stats_.inactive_split_bytes, pool,
                       [&](stat& s) { apply(s, net_inactive_split_bytes); });
    }
    for_pool_stats(stats_.requested_bytes, pool, [requested](stat& s) { s.decrease(requested); });
}

void device_allocator_impl::free_pending_block(block* b, context_handle context) {
    add_pending(*b->pool, -1, -static_cast<int64_t>(b->size));
    free_block(b, context);
}

uint64_t device_allocator_impl::merge_blocks(block* dst, block* src, block_pool& pool) {
    if (dst->prev == src) {  // [src dst]
        dst->ptr = src->ptr;
        dst->prev = src->prev;
        if (dst->prev) {
            dst->prev->next = dst;
        }
        dst->context_when_segment_allocated = src->context_when_segment_allocated;
    } else {  // [dst src]
        dst->next = src->next;
        if (dst->next) {
            dst->next->prev = dst;
        }
    }
    const uint64_t subsumed = src->size;
    dst->size += subsumed;
    if (src->mapped) {
        pool.erase_free(src);
    } else {
        pool.unmapped.erase(src);
    }
    arena_.recycle(src);
    return subsumed;
}

event_handle device_allocator_impl::acquire_event() {
    // Creating events can be slow and serializing: keep finished ones for reuse.
    if (!event_pool_.empty()) {
        const event_handle e = event_pool_.back();
        event_pool_.pop_back();
        return e;
    }
    return dev.create_event();
}

void device_allocator_impl::insert_events(block* b) {
    std::vector<stream_handle> streams;
    streams.swap(b->stream_uses);
    for (stream_handle s : streams) {
        const event_handle e = acquire_event();
        dev.record_event(e, s);
        b->event_count++;
        stream_events_[s].emplace_back(e, b);
    }
}

void device_allocator_impl::insert_events_deferred_until_no_capture(context_handle context) {
    std::vector<block*> deferred;
    deferred.swap(deferred_until_no_capture_);
    for (block* b : deferred) {
        // Uses recorded during the capture belong to the graph, which orders them itself.
        auto uses = capture_stream_uses_.find(b);
        if (uses != capture_stream_uses_.end()) {
            std::erase_if(b->stream_uses, [&](stream_handle s) {
                return std::find(uses->second.begin(), uses->second.end(), s) != uses->second.end();
            });
            capture_stream_uses_.erase(uses);
        }
        if (b->stream_uses.empty()) {
            free_pending_block(b, context);
        } else {
            insert_events(b);
        }
    }
}

void device_allocator_impl::process_events_locked(context_handle context) {
    insert_events_deferred_until_no_capture(context);
    // Per stream, so one busy stream does not hold back the others.
    for (auto it = stream_events_.begin(); it != stream_events_.end();) {
        auto& queue = it->second;
        while (!queue.empty()) {
            auto [event, b] = queue.front();
            if (!dev.query_event(event)) {
                break;
            }
            event_pool_.push_back(event);
            queue.pop_front();
            if (--b->event_count == 0) {
                free_pending_block(b, context);
            }
        }
        it = queue.empty() ? stream_events_.erase(it) : std::next(it);
    }
}

void device_allocator_impl::synchronize_and_free_events(context_handle context,
                                                        const private_pool* only) {
    stats_.num_sync_all_streams++;
    insert_events_deferred_until_no_capture(context);
    for (auto it = stream_events_.begin(); it != stream_events_.end();) {
        auto& queue = it->second;
        for (auto e = queue.begin(); e != queue.end();) {
            auto [event, b] = *e;
            if (only && b->pool->owner != only) {
                ++e;
                continue;
            }
            dev.synchronize_event(event);
            event_pool_.push_back(event);
            if (--b->event_count == 0) {
                free_pending_block(b, context);
            }
            e = queue.erase(e);
        }
        it = queue.empty() ? stream_events_.erase(it) : std::next(it);
    }
}

}  // namespace memtrail::detail

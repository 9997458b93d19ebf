// Expandable segments: one growing segment per stream and pool. A request is placed at the
// lowest address where free and unmapped space together fit it, mapping pages on demand.

#include "detail/device_allocator_impl.hpp"

namespace memtrail::detail {

block* device_allocator_impl::find_expandable_block(stream_handle stream, block_pool& pool,
                                                    uint64_t size) {
    block key;
    key.stream = stream;
    auto allocatable = [](const block* b) {
        return b && !b->allocated && b->event_count == 0 && b->stream_uses.empty();
    };
    auto has_room = [&](const block* b) {
        uint64_t bytes = 0;
        while (bytes < size && allocatable(b)) {
            bytes += b->size;
            b = b->next;
        }
        return bytes >= size;
    };
    for (auto it = pool.unmapped.lower_bound(&key);
         it != pool.unmapped.end() && (*it)->stream == stream; ++it) {
        block* candidate = *it;
        // A free block right before the unmapped range can be part of the placement.
        if (allocatable(candidate->prev)) {
            candidate = candidate->prev;
        }
        if (has_room(candidate)) {
            return candidate;
        }
    }
    // None fits: reserve a new segment with room for 1 1/8 of the device, so pages unmapped
    // early in the segment can be re-placed at its end.
    const uint64_t page_size = pool.is_small ? size_rules::small_buffer : size_rules::large_buffer;
    const uint64_t total = dev.get_memory_info().total;
    const uint64_t address_space = total + total / 8;
    const uint64_t max_pages = (address_space + page_size - 1) / page_size;
    expandable_segments_.push_back(
        std::make_unique<expandable_segment>(dev, stream, page_size, max_pages));
    expandable_segment* segment = expandable_segments_.back().get();
    block* candidate = arena_.make(stream, segment->size(), &pool, segment->ptr());
    candidate->mapped = false;
    candidate->expandable = segment;
    pool.unmapped.insert(candidate);
    return candidate;
}

bool device_allocator_impl::map_block(block* to_map, uint64_t size, context_handle context) {
    const address_range mapped = to_map->expandable->map({to_map->ptr, size});
    if (mapped.size == 0) {
        return false;
    }
    block_pool& pool = *to_map->pool;
    pool.unmapped.erase(to_map);
    to_map->mapped = true;
    if (mapped.size < to_map->size) {
        // to_map -> remaining (still unmapped) -> old next
        block* remaining = arena_.make(to_map->stream, to_map->size - mapped.size, &pool,
                                       to_map->ptr + mapped.size);
        remaining->mapped = false;
        remaining->expandable = to_map->expandable;
        remaining->splice(to_map, to_map->next);
        pool.unmapped.insert(remaining);
        to_map->size = mapped.size;
    }
    try_merge_blocks(to_map, to_map->prev, pool);
    try_merge_blocks(to_map, to_map->next, pool);
    pool.insert_into_blocks(to_map);

    total_allocated_memory_ += mapped.size;
    const uint64_t bytes = mapped.size;
    for_pool_stats(stats_.reserved_bytes, pool, [bytes](stat& s) { s.increase(bytes); });
    stats_.num_device_alloc++;
    record(allocator_action::segment_map, mapped.ptr, mapped.size, mapped.size, to_map->stream,
           context, &pool);
    if (!to_map->prev && !to_map->context_when_segment_allocated) {
        to_map->context_when_segment_allocated = context;
    }
    return true;
}

block* device_allocator_impl::try_allocate_expandable_block(stream_handle stream, block_pool& pool,
                                                            uint64_t size, context_handle context) {
    // The candidate is one of: unmapped -> end; unmapped -> free -> ...; free -> unmapped -> ...
    block* candidate = find_expandable_block(stream, pool, size);
    if (!candidate->mapped && !map_block(candidate, std::min(candidate->size, size), context)) {
        return nullptr;
    }
    while (candidate->size < size) {
        // free -> unmapped: map the shortfall; map_block merges it into the free block.
        const uint64_t shortfall = size - candidate->size;
        block* next = candidate->next;
        if (!map_block(next, std::min(shortfall, next->size), context)) {
            return nullptr;
        }
        candidate = next;
    }
    pool.erase_free(candidate);
    return candidate;
}

void device_allocator_impl::unmap_block(block* b, context_handle context) {
    const address_range unmapped = b->expandable->unmap({b->ptr, b->size});
    if (unmapped.size == 0) {
        return;
    }
    block_pool& pool = *b->pool;
    pool.erase_free(b);
    const uint64_t before_size = unmapped.ptr - b->ptr;
    if (before_size > 0) {
        // prev -> before_free -> b: the partial page in front stays mapped and free.
        block* before_free = arena_.make(b->stream, before_size, &pool, b->ptr);
        before_free->expandable = b->expandable;
        before_free->splice(b->prev, b);
        pool.insert_into_blocks(before_free);
    }
    const uint64_t after_size = b->size - (before_size + unmapped.size);
    if (after_size > 0) {
        block* after_free = arena_.make(b->stream, after_size, &pool, unmapped.ptr + unmapped.size);
        after_free->expandable = b->expandable;
        after_free->splice(b, b->next);
        pool.insert_into_blocks(after_free);
    }
    b->ptr = unmapped.ptr;
    b->size = unmapped.size;
    b->mapped = false;
    try_merge_blocks(b, b->prev, pool);
    try_merge_blocks(b, b->next, pool);
    pool.unmapped.insert(b);

    total_allocated_memory_ -= unmapped.size;
    const uint64_t bytes = unmapped.size;
    for_pool_stats(stats_.reserved_bytes, pool, [bytes](stat& s) { s.decrease(bytes); });
    // PyTorch counts a private pool's device allocations up per expandable allocation and down
    // per unmapped range.
    if (pool.owner && pool.owner->device_malloc_count > 0) {
        pool.owner->device_malloc_count--;
    }
    stats_.num_device_free++;
    record(allocator_action::segment_unmap, unmapped.ptr, unmapped.size, unmapped.size, b->stream,
           context ? context : b->context_when_segment_allocated, &pool);
}

void device_allocator_impl::release_expandable_segment(block* b) {
    expandable_segment* segment = b->expandable;
    auto it = std::find_if(expandable_segments_.begin(), expandable_segments_.end(),
                           [segment](const auto& s) { return s.get() == segment; });
    b->pool->unmapped.erase(b);
    arena_.recycle(b);
    expandable_segments_.erase(it);
}

}  // namespace memtrail::detail

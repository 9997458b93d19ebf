// Giving memory back to the device: cached oversize blocks when an allocation fails, every
// unsplit cached block on the retry and in empty_cache, and garbage collection of old cached
// blocks above the configured fraction of the allowed memory.

#include "detail/device_allocator_impl.hpp"

namespace memtrail::detail {

void device_allocator_impl::empty_cache(context_handle context, pool_id pool) {
    std::lock_guard<device_lock> lock(mutex);
    release_cached_blocks(context, pool);
}

void device_allocator_impl::set_memory_fraction(double fraction) {
    std::lock_guard<device_lock> lock(mutex);
    const memory_info info = dev.get_memory_info();
    allowed_memory_maximum_ = static_cast<uint64_t>(fraction * static_cast<double>(info.total));
    set_fraction_ = true;
    memory_fraction_ = fraction;
}

double device_allocator_impl::memory_fraction() const {
    std::lock_guard<device_lock> lock(mutex);
    return memory_fraction_;
}

bool device_allocator_impl::release_available_cached_blocks(const alloc_params& p,
                                                            context_handle context) {
    if (config.max_split_size == size_rules::unlimited) {
        return false;
    }
    block_pool& pool = *p.pool;
    const free_entry key(p.stream(), std::max(p.size(), config.max_split_size), 0);
    auto it = pool.blocks.lower_bound(key);
    if (it == pool.blocks.end() || (*it)->stream != p.stream() || (*it)->expandable) {
        // No single oversize block is large enough: free several, the largest first.
        if (it == pool.blocks.begin()) {
            return false;
        }
        uint64_t released = 0;
        --it;
        while (released < key.size && (*it)->size >= config.max_split_size &&
               (*it)->stream == p.stream()) {
            auto current = it;
            const bool is_first = current == pool.blocks.begin();
            if (!is_first) {
                --it;
            }
            if (!(*current)->expandable) {
                released += (*current)->size;
                release_block(*current, context);
            }
            if (is_first) {
                break;
            }
        }
        return released >= key.size;
    }
    release_block(*it, context);
    return true;
}

bool device_allocator_impl::release_cached_blocks(context_handle context, pool_id pool) {
    if (pool.is_default() && captures_underway_.empty()) {
        // Blocks still waiting on other streams' events cannot be released until those finish.
        synchronize_and_free_events(context);
        release_blocks(large_blocks_, context);
        release_blocks(small_blocks_, context);
    }
    // Released private pools give back their cached blocks too (all of them for the default
    // pool's flush, the one named otherwise) and go once they hold no segment.
    for (auto it = freeable_pools_.begin(); it != freeable_pools_.end();) {
        private_pool* freeable = it->second;
        if (!pool.is_default()) {
            if (it->first != pool) {
                ++it;
                continue;
            }
            synchronize_and_free_events(context, freeable);
        }
        release_blocks(freeable->small_blocks, context);
        release_blocks(freeable->large_blocks, context);
        if (freeable->device_malloc_count == 0) {
            const pool_id id = it->first;
            it = freeable_pools_.erase(it);
            private_pools_.erase(id);
        } else {
            ++it;
        }
    }
    return true;
}

void device_allocator_impl::release_blocks(block_pool& pool, context_handle context) {
    // Releasing a block erases it from the index, which moves the positions after it: walk a
    // copy, in the index's order.
    const std::vector<block*> free_blocks(pool.blocks.begin(), pool.blocks.end());
    std::vector<block*> to_unmap;
    for (block* b : free_blocks) {
        if (b->expandable) {
            to_unmap.push_back(b);  // unmapping changes the pool: do it after the walk
        } else if (!b->prev && !b->next) {
            release_block(b, context);
        }
    }
    for (block* b : to_unmap) {
        unmap_block(b, context);
        if (!b->prev && !b->next) {
            release_expandable_segment(b);
        }
    }
}

void device_allocator_impl::release_block(block* b, context_handle context) {
    stats_.num_device_free++;
    record(allocator_action::segment_free, b->ptr, b->size, b->size, b->stream,
           context ? context : b->context_when_segment_allocated, b->pool);
    dev.free(b->ptr);
    total_allocated_memory_ -= b->size;
    if (b->pool->owner) {
        b->pool->owner->device_malloc_count--;
    }
    const uint64_t size = b->size;
    for_pool_stats(stats_.segment, *b->pool, [](stat& s) { s.decrease(1); });
    for_pool_stats(stats_.reserved_bytes, *b->pool, [size](stat& s) { s.decrease(size); });
    if (is_oversize(size)) {
        stats_.oversize_segments.decrease(1);
    }
    b->pool->erase_free(b);
    arena_.recycle(b);
}

void device_allocator_impl::garbage_collect_cached_blocks(context_handle context) {
    const auto threshold = static_cast<uint64_t>(config.garbage_collection_threshold *
                                                 static_cast<double>(allowed_memory_maximum_));
    if (total_allocated_memory_ <= threshold) {
        return;
    }
    const uint64_t target = total_allocated_memory_ - threshold;
    uint64_t reclaimed = 0;
    // The average age of the releasable blocks; older ones go first.
    uint64_t total_age = 0;
    int freeable = 0;
    for (const block* b : large_blocks_.blocks) {
        if (!b->is_split()) {
            total_age += static_cast<uint64_t>(large_blocks_.gc_count(b));
            ++freeable;
        }
    }
    if (freeable == 0) {
        return;
    }
    bool freed_one = true;
    while (reclaimed < target && freed_one && freeable > 0) {
        const double age_threshold = static_cast<double>(total_age) / freeable;
        freed_one = false;
        // Free every block at least as old as the average, not only up to the target, so
        // collection does not run again at once.
        const std::vector<block*> free_blocks(large_blocks_.blocks.begin(),
                                              large_blocks_.blocks.end());
        for (block* b : free_blocks) {
            if (!b->is_split() && !b->expandable &&
                static_cast<double>(large_blocks_.gc_count(b)) >= age_threshold) {
                freed_one = true;
                reclaimed += b->size;
                total_age -= static_cast<uint64_t>(large_blocks_.gc_count(b));
                freeable--;
                release_block(b, context);
            }
        }
    }
}

}  // namespace memtrail::detail

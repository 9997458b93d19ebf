// Looking at the allocator without changing it: statistics, the segment/block snapshot, and a
// consistency check that recounts everything from the blocks (used by the tests after every step).

#include <algorithm>
#include <sstream>
#include <unordered_set>

#include "detail/device_allocator_impl.hpp"

namespace memtrail::detail {

device_allocator_impl::device_allocator_impl(device& d, allocator_config c)
    : dev(d), config(std::move(c)), device_index_(d.index()) {
    stats_.max_split_size = size_rules::max_split_size_statistic(config.max_split_size);
}

device_allocator_impl::~device_allocator_impl() {
    // Blocks are owned by the pools and, while active, by the allocator; free each once.
    std::unordered_set<block*> all;
    for_each_block_pool([&](const block_pool& pool) {
        all.insert(pool.blocks.begin(), pool.blocks.end());
        all.insert(pool.unmapped.begin(), pool.unmapped.end());
    });
    for_each_active_block([&](block* b) { all.insert(b); });
    for (auto& [stream, queue] : stream_events_) {
        for (auto& waiting : queue) {
            dev.destroy_event(waiting.first);
        }
    }
    for (event_handle e : event_pool_) {
        dev.destroy_event(e);
    }
    for (block* b : all) {
        delete b;
    }
}

bool device_allocator_impl::would_release_memory(uint64_t orig_size, stream_handle stream) {
    std::lock_guard<device_lock> lock(mutex);
    alloc_params p;
    p.search_key.stream = stream;
    p.search_key.size = round_size(orig_size, config);
    p.pool = &get_pool(p.search_key.size, stream);
    p.alloc_size = size_rules::segment_size_for(p.search_key.size);
    // Look for a cached block exactly as malloc would, then put everything back as it was.
    const int64_t clock = p.pool->get_free_blocks_call_count;
    const bool cached = get_free_block(p);
    p.pool->get_free_blocks_call_count = clock;
    if (cached) {
        p.pool->reinsert(p.found);
        return false;
    }
    if (set_fraction_ && config.garbage_collection_threshold > 0.0) {
        const auto threshold = static_cast<uint64_t>(config.garbage_collection_threshold *
                                                     static_cast<double>(allowed_memory_maximum_));
        if (total_allocated_memory_ > threshold) {
            for (const block* b : large_blocks_.blocks) {
                if (!b->is_split() && !b->expandable) {
                    return true;
                }
            }
        }
    }
    if (set_fraction_ && total_allocated_memory_ + p.alloc_size > allowed_memory_maximum_) {
        return true;
    }
    const uint64_t page = p.pool->is_small ? size_rules::small_buffer : size_rules::large_buffer;
    const uint64_t needed =
        config.expandable_segments ? (p.size() + page - 1) / page * page : p.alloc_size;
    return dev.get_memory_info().free < needed;
}

bool device_allocator_impl::has_cached_block(uint64_t orig_size, stream_handle stream,
                                             pool_id pool) {
    std::lock_guard<device_lock> lock(mutex);
    alloc_params p;
    p.search_key.stream = stream;
    p.search_key.size = round_size(orig_size, config);
    if (pool.is_default()) {
        p.pool = size_rules::is_small_request(p.size()) ? &small_blocks_ : &large_blocks_;
    } else {
        private_pool* owner = find_pool(pool);
        if (!owner) {
            return false;
        }
        p.pool =
            size_rules::is_small_request(p.size()) ? &owner->small_blocks : &owner->large_blocks;
    }
    const int64_t clock = p.pool->get_free_blocks_call_count;
    const bool cached = get_free_block(p);
    p.pool->get_free_blocks_call_count = clock;
    if (cached) {
        p.pool->reinsert(p.found);
    }
    return cached;
}

stat_array device_allocator_impl::active_from(const stat_array& allocation,
                                              const pending_array& pending) {
    stat_array active;
    for (size_t i = 0; i < stat_type_count; ++i) {
        active[i].current = allocation[i].current + pending[i].current;
        active[i].peak = std::max(allocation[i].peak, pending[i].active_peak);
        active[i].allocated = allocation[i].allocated;  // both rise at every allocation
        active[i].freed = allocation[i].freed - pending[i].freed_lag;
    }
    return active;
}

device_stats device_allocator_impl::with_active_stats() const {
    device_stats stats = stats_;
    stats.active = active_from(stats_.allocation, pending_blocks_);
    stats.active_bytes = active_from(stats_.allocated_bytes, pending_bytes_);
    return stats;
}

device_stats device_allocator_impl::get_stats() const {
    std::lock_guard<device_lock> lock(mutex);
    return with_active_stats();
}

namespace {

// Every current/peak/allocated/freed counter, the per-pool arrays and the oversize ones.
template <typename F>
void for_each_stat(device_stats& stats, F f) {
    for (stat_array* array :
         {&stats.allocation, &stats.segment, &stats.active, &stats.inactive_split,
          &stats.allocated_bytes, &stats.reserved_bytes, &stats.active_bytes,
          &stats.inactive_split_bytes, &stats.requested_bytes}) {
        for (stat& s : *array) {
            f(s);
        }
    }
    f(stats.oversize_allocations);
    f(stats.oversize_segments);
}

}  // namespace

void device_allocator_impl::reset_peak_stats() {
    std::lock_guard<device_lock> lock(mutex);
    for_each_stat(stats_, [](stat& s) { s.reset_peak(); });
    for (size_t i = 0; i < stat_type_count; ++i) {
        pending_blocks_[i].active_peak = stats_.allocation[i].current + pending_blocks_[i].current;
        pending_bytes_[i].active_peak =
            stats_.allocated_bytes[i].current + pending_bytes_[i].current;
    }
}

void device_allocator_impl::reset_accumulated_stats() {
    std::lock_guard<device_lock> lock(mutex);
    for_each_stat(stats_, [](stat& s) { s.reset_accumulated(); });
    for (size_t i = 0; i < stat_type_count; ++i) {
        pending_blocks_[i].freed_lag = 0;
        pending_bytes_[i].freed_lag = 0;
    }
    stats_.num_alloc_retries = 0;
    stats_.num_ooms = 0;
    stats_.num_sync_all_streams = 0;
    stats_.num_device_alloc = 0;
    stats_.num_device_free = 0;
}

std::vector<segment_info> device_allocator_impl::snapshot(bool record_event) const {
    std::lock_guard<device_lock> lock(mutex);
    std::vector<const block*> all;
    for_each_block_pool([&](const block_pool& pool) {
        all.insert(all.end(), pool.blocks.begin(), pool.blocks.end());
    });
    for_each_active_block([&](const block* b) { all.push_back(b); });
    std::sort(all.begin(), all.end());  // each block once
    all.erase(std::unique(all.begin(), all.end()), all.end());
    std::vector<segment_info> result;
    uint64_t total_active = 0;
    for (const block* head : all) {
        // An expandable segment is reported as one segment per contiguous mapped range.
        if (head->prev && head->prev->mapped) {
            continue;
        }
        segment_info& segment = result.emplace_back();
        segment.device = device_index_;
        segment.address = head->ptr;
        segment.stream = head->stream;
        segment.is_large = !head->pool->is_small;
        segment.is_expandable = head->expandable != nullptr;
        segment.pool = owner_id(*head->pool);
        segment.context = head->context_when_segment_allocated;
        for (const block* b = head; b && b->mapped; b = b->next) {
            block_info& info = segment.blocks.emplace_back();
            info.address = b->ptr;
            info.size = b->size;
            info.requested_size = b->requested_size;
            info.allocated = b->allocated;
            info.active = b->allocated || b->event_count > 0 || !b->stream_uses.empty();
            info.context = b->context_when_allocated;
            segment.total_size += b->size;
            if (info.allocated) {
                segment.allocated_size += b->size;
            }
            if (info.active) {
                segment.active_size += b->size;
                segment.requested_size += b->requested_size;
            }
        }
        total_active += segment.active_size;
    }
    std::sort(result.begin(), result.end(),
              [](const segment_info& a, const segment_info& b) { return a.address < b.address; });
    if (record_event) {
        const_cast<device_allocator_impl*>(this)->record(allocator_action::snapshot, 0,
                                                         total_active, total_active, 0, 0);
    }
    return result;
}

std::string device_allocator_impl::check_consistency() const {
    std::lock_guard<device_lock> lock(mutex);
    std::ostringstream problems;
    // Every block, found from the pools and where the active ones are, then grouped into segments.
    std::unordered_set<const block*> all;
    for_each_block_pool([&](const block_pool& pool) {
        for (const block* b : pool.blocks) {
            if (b->allocated || !b->mapped) {
                problems << "pool holds an allocated or unmapped block at " << b->ptr << "\n";
            }
            all.insert(b);
        }
        for (const block* b : pool.unmapped) {
            if (b->mapped || b->allocated) {
                problems << "unmapped set holds a mapped block at " << b->ptr << "\n";
            }
            all.insert(b);
        }
    });
    for_each_active_block([&](const block* b) { all.insert(b); });
    device_stats recount;
    size_t allocated_blocks = 0;
    for (const block* head : all) {
        if (head->prev) {
            continue;
        }
        const block_pool& pool = *head->pool;
        const size_t type = static_cast<size_t>(pool_stat_type(pool.is_small));
        if (!head->expandable) {
            recount.segment[0].current++;
            recount.segment[type].current++;
        }
        for (const block* b = head; b; b = b->next) {
            if (!all.count(b)) {
                problems << "block at " << b->ptr << " is in a segment but in no pool or list\n";
            }
            if (b->next && b->ptr + b->size != b->next->ptr) {
                problems << "blocks at " << b->ptr << " and " << b->next->ptr
                         << " do not tile their segment\n";
            }
            if (b->next && b->next->prev != b) {
                problems << "broken back link after " << b->ptr << "\n";
            }
            if (b->pool != &pool) {
                problems << "block at " << b->ptr << " is in another pool than its segment\n";
            }
            const bool is_free = !b->allocated && b->event_count == 0 && b->stream_uses.empty();
            if (b->next && is_free && !b->next->allocated && b->next->event_count == 0 &&
                b->next->stream_uses.empty() && b->mapped == b->next->mapped) {
                problems << "free neighbours at " << b->ptr << " and " << b->next->ptr << "\n";
            }
            if (!b->mapped) {
                continue;
            }
            auto add = [&](stat_array& a, int64_t v) {
                a[0].current += v;
                a[type].current += v;
            };
            add(recount.reserved_bytes, static_cast<int64_t>(b->size));
            if (b->allocated) {
                ++allocated_blocks;
                add(recount.allocation, 1);
                add(recount.allocated_bytes, static_cast<int64_t>(b->size));
            }
            if (!is_free) {
                add(recount.active, 1);
                add(recount.active_bytes, static_cast<int64_t>(b->size));
                add(recount.requested_bytes, static_cast<int64_t>(b->requested_size));
            } else if (b->is_split() && !b->expandable) {
                add(recount.inactive_split, 1);
                add(recount.inactive_split_bytes, static_cast<int64_t>(b->size));
            }
        }
    }
    auto compare = [&](const char* name, const stat_array& expected, const stat_array& actual) {
        static const char* pools[] = {"all", "small_pool", "large_pool"};
        for (size_t i = 0; i < stat_type_count; ++i) {
            if (expected[i].current != actual[i].current) {
                problems << name << "." << pools[i] << ".current is " << actual[i].current
                         << " but the blocks add up to " << expected[i].current << "\n";
            }
        }
    };
    compare("allocation", recount.allocation, stats_.allocation);
    compare("segment", recount.segment, stats_.segment);
    const device_stats stats = with_active_stats();
    compare("active", recount.active, stats.active);
    compare("inactive_split", recount.inactive_split, stats_.inactive_split);
    compare("allocated_bytes", recount.allocated_bytes, stats_.allocated_bytes);
    compare("reserved_bytes", recount.reserved_bytes, stats_.reserved_bytes);
    compare("active_bytes", recount.active_bytes, stats.active_bytes);
    compare("inactive_split_bytes", recount.inactive_split_bytes, stats_.inactive_split_bytes);
    compare("requested_bytes", recount.requested_bytes, stats_.requested_bytes);
    if (static_cast<uint64_t>(recount.reserved_bytes[0].current) != total_allocated_memory_) {
        problems << "device memory held " << total_allocated_memory_ << " != reserved bytes "
                 << recount.reserved_bytes[0].current << "\n";
    }
    if (allocated.size() != allocated_blocks) {
        problems << "address map holds " << allocated.size() << " blocks but " << allocated_blocks
                 << " are allocated\n";
    }
    return problems.str();
}

}  // namespace memtrail::detail

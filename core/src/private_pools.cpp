// Private pools, as torch 2.11's allocator keeps them for CUDA graphs and torch.cuda.MemPool:
// a pool is created (or shared) when allocation to it begins, holds its own free blocks so its
// memory serves only allocations made to it, and is deleted after its last use is released and
// its last segment given back by an empty_cache.

#include <algorithm>
#include <sstream>

#include "detail/device_allocator_impl.hpp"

namespace memtrail::detail {

namespace {
std::string pool_name(pool_id id) {
    std::ostringstream s;
    s << "(" << id.first << ", " << id.second << ")";
    return s.str();
}
}  // namespace

block_pool* device_allocator_impl::capturing_pool(uint64_t size, stream_handle stream) {
    // Newest first: a pool begun inside another one's scope takes precedence.
    for (auto it = captures_underway_.rbegin(); it != captures_underway_.rend(); ++it) {
        if (it->second(stream)) {
            private_pool* pool = find_pool(it->first);
            return size_rules::is_small_request(size) ? &pool->small_blocks : &pool->large_blocks;
        }
    }
    return nullptr;
}

private_pool* device_allocator_impl::find_pool(pool_id id) const {
    auto it = private_pools_.find(id);
    return it == private_pools_.end() ? nullptr : it->second.get();
}

private_pool& device_allocator_impl::create_or_incref_pool(pool_id id) {
    auto it = private_pools_.find(id);
    if (it == private_pools_.end()) {
        return *private_pools_.emplace(id, std::make_unique<private_pool>(id)).first->second;
    }
    if (it->second->use_count == 0) {
        // PyTorch asserts here: a released pool cannot be taken up again.
        throw usage_error("memtrail: private pool " + pool_name(id) +
                          " was released; it cannot be used again before it is emptied");
    }
    it->second->use_count++;
    return *it->second;
}

void device_allocator_impl::create_pool(pool_id id, pool_options options) {
    std::lock_guard<device_lock> lock(mutex);
    create_or_incref_pool(id);
    if (options.no_split) {
        no_split_pools_.insert(id);
    }
    if (options.use_on_oom) {
        use_on_oom_pools_.insert(id);
    }
}

void device_allocator_impl::begin_allocate_to_pool(pool_id id, stream_filter filter) {
    std::lock_guard<device_lock> lock(mutex);
    for (const auto& [underway, ignored] : captures_underway_) {
        if (underway == id) {
            throw usage_error("memtrail: begin_allocate_to_pool: already allocating to pool " +
                              pool_name(id));
        }
    }
    create_or_incref_pool(id);
    captures_underway_.emplace_back(id, std::move(filter));
}

void device_allocator_impl::end_allocate_to_pool(pool_id id) {
    std::lock_guard<device_lock> lock(mutex);
    auto it = std::find_if(captures_underway_.begin(), captures_underway_.end(),
                           [&](const auto& entry) { return entry.first == id; });
    if (it == captures_underway_.end()) {
        throw usage_error("memtrail: end_allocate_to_pool: not allocating to pool " +
                          pool_name(id));
    }
    captures_underway_.erase(it);
}

void device_allocator_impl::release_pool(pool_id id) {
    std::lock_guard<device_lock> lock(mutex);
    private_pool* pool = find_pool(id);
    if (!pool || pool->use_count == 0) {
        throw usage_error("memtrail: release_pool: pool " + pool_name(id) +
                          (pool ? " is already released" : " does not exist"));
    }
    if (--pool->use_count == 0) {
        // Its cached blocks may now go back at the next full release.
        freeable_pools_.emplace(id, pool);
    }
}

int device_allocator_impl::pool_use_count(pool_id id) const {
    std::lock_guard<device_lock> lock(mutex);
    const private_pool* pool = find_pool(id);
    return pool ? pool->use_count : 0;
}

bool device_allocator_impl::allocates_to_pool(stream_handle stream) const {
    std::lock_guard<device_lock> lock(mutex);
    return std::any_of(captures_underway_.begin(), captures_underway_.end(),
                       [&](const auto& entry) { return entry.second(stream); });
}

uint64_t device_allocator_impl::free_bytes_in_private_pools() const {
    uint64_t bytes = 0;
    for (const auto& [id, pool] : private_pools_) {
        for (const block_pool* blocks : {&pool->large_blocks, &pool->small_blocks}) {
            for (const block* b : blocks->blocks) {
                bytes += b->size;
            }
        }
    }
    return bytes;
}

}  // namespace memtrail::detail

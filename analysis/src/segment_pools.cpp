#include "memtrail/analysis/segment_pools.hpp"

#include <algorithm>

namespace memtrail::analysis {

std::string pool_name(segment_pool pool) {
    if (pool.is_default()) {
        return "default";
    }
    return "(" + std::to_string(pool.first) + ", " + std::to_string(pool.second) + ")";
}

std::string pool_kind(segment_pool pool) {
    if (pool.is_default()) {
        return "default";
    }
    return pool.second == 0 ? "CUDA graph" : "MemPool";
}

std::string pool_owner(segment_pool pool) {
    if (pool.is_default()) {
        return "default";
    }
    if (pool.second == 0) {
        return "a CUDA graph's own pool (capture " + std::to_string(pool.first) + ")";
    }
    return "a MemPool or a pool shared by CUDA graphs (torch.cuda.MemPool, graph_pool_handle, "
           "torch.compile)";
}

segment_pools::segment_pools(const snapshot::snapshot& source, int device) {
    for (const snapshot::segment& seg : source.segments) {
        if (seg.device != device) {
            continue;
        }
        const segment_pool pool{seg.pool_id_first, seg.pool_id_second};
        by_address_[seg.address] = {seg.total_size, pool};
        const auto [on_stream, first] = by_stream_.try_emplace(seg.stream, pool);
        if (!first && on_stream->second != pool) {
            on_stream->second = std::nullopt;
        }
        if (!pool.is_default()) {
            private_pools_.push_back(pool);
        }
    }
    std::sort(private_pools_.begin(), private_pools_.end());
    private_pools_.erase(std::unique(private_pools_.begin(), private_pools_.end()),
                         private_pools_.end());
}

std::optional<segment_pool> segment_pools::pool_of(uint64_t address, uint64_t total_size) const {
    const auto it = by_address_.find(address);
    if (it == by_address_.end() || it->second.total_size != total_size) {
        return std::nullopt;
    }
    return it->second.pool;
}

std::optional<segment_pool> segment_pools::pool_holding(uint64_t address) const {
    auto it = by_address_.upper_bound(address);
    if (it == by_address_.begin()) {
        return std::nullopt;
    }
    --it;
    if (address >= it->first + it->second.total_size) {
        return std::nullopt;
    }
    return it->second.pool;
}

std::optional<segment_pool> segment_pools::pool_of_stream(uint64_t stream) const {
    const auto it = by_stream_.find(stream);
    if (it == by_stream_.end() || !it->second) {
        return std::nullopt;
    }
    return it->second;
}

std::optional<resolved_pool> segment_pools::resolve(const snapshot::segment& seg) const {
    if (const auto known = pool_of(seg.address, seg.total_size)) {
        return resolved_pool{*known, false};
    }
    if (const auto by_stream = pool_of_stream(seg.stream)) {
        return resolved_pool{*by_stream, true};
    }
    return std::nullopt;
}

bool pool_filter::accepts(std::optional<segment_pool> candidate) const {
    switch (shown) {
        case kind::all:
            return true;
        case kind::default_pools:
            return candidate && candidate->is_default();
        case kind::one_private:
            return candidate && *candidate == pool;
    }
    return true;
}

}  // namespace memtrail::analysis

#include "memtrail/analysis/segment_pools.hpp"

#include <algorithm>
#include <string_view>

namespace memtrail::analysis {

std::string pool_name(segment_pool pool) {
    if (pool.is_default()) {
        return "default";
    }
    return "(" + std::to_string(pool.first) + ", " + std::to_string(pool.second) + ")";
}

namespace {

// torch.compile(mode="reduce-overhead") records its CUDA graphs through this file.
bool through_cudagraph_trees(const snapshot::snapshot& source, snapshot::stack_id stack) {
    if (stack == snapshot::no_id) {
        return false;
    }
    for (const snapshot::frame_id f : source.stack_at(stack)) {
        const snapshot::string_id file = source.frame_at(f).filename;
        if (file != snapshot::no_id &&
            source.string_at(file).find("_inductor/cudagraph_trees.py") != std::string_view::npos) {
            return true;
        }
    }
    return false;
}

}  // namespace

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
    // The owner from the stacks of the allocations made in the pools' segments.
    if (private_pools_.empty()) {
        return;
    }
    const snapshot::device_trace* trace = source.find_trace(device);
    for (size_t i = 0; trace && i < trace->entries.size(); ++i) {
        const snapshot::trace_entry& e = trace->entries[i];
        if (e.kind != snapshot::action::alloc) {
            continue;
        }
        const auto pool = pool_holding(e.address);
        if (pool && !pool->is_default() &&
            std::find(compiled_graph_pools_.begin(), compiled_graph_pools_.end(), *pool) ==
                compiled_graph_pools_.end() &&
            through_cudagraph_trees(source, e.stack)) {
            compiled_graph_pools_.push_back(*pool);
        }
    }
}

std::string segment_pools::owner(segment_pool pool) const {
    if (std::find(compiled_graph_pools_.begin(), compiled_graph_pools_.end(), pool) !=
        compiled_graph_pools_.end()) {
        return "torch.compile's CUDA graph trees (mode=\"reduce-overhead\")";
    }
    return pool_owner(pool);
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

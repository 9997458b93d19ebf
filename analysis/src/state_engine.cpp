// The state engine: applies trace entries one at a time to the allocator state (blocks, segments,
// the counters of memory_stats()), saves and restores checkpoints, and materializes the state at a
// position as the snapshot model.
//
// Index of this file:
// [SECTION] counters
// [SECTION] checkpoints
// [SECTION] applying an entry
// [SECTION] allocations and frees
// [SECTION] segments and expandable pages
// [SECTION] the state as a snapshot

#include "detail/state_engine.hpp"

#include <algorithm>
#include <iterator>

#include "detail/branchless_search.hpp"

namespace memtrail::analysis::detail {
namespace {

using snapshot::action;
using snapshot::block_state;

//-------------------------------------------------------------------------------------------------
// [SECTION] counters
//-------------------------------------------------------------------------------------------------

void add(stat_array& counters, bool is_large, int64_t delta) {
    for_pool_stats(counters, pool_stat_type(!is_large), [delta](stat& s) {
        if (delta > 0) {
            s.increase(static_cast<uint64_t>(delta));
        } else if (delta < 0) {
            s.decrease(static_cast<uint64_t>(-delta));
        }
    });
}

void set_current(stat& s, int64_t value) {
    s.current = s.peak = s.allocated = value;
    s.freed = 0;
}

void set_current(stat_array& counters, bool is_large, int64_t value) {
    for_pool_stats(counters, pool_stat_type(!is_large), [value](stat& s) {
        s.current += value;
        s.peak = s.allocated = s.current;
        s.freed = 0;
    });
}

// Free blocks inside a split segment, the way PyTorch's inactive_split counters see them: a
// segment that is one single block has none.
struct split_count {
    int64_t blocks = 0;
    int64_t bytes = 0;
};

split_count split_of_range(uint64_t first, uint64_t last, uint64_t segment_first,
                           uint64_t segment_last) {
    if (first == segment_first && last == segment_last) {
        return {};
    }
    return {1, static_cast<int64_t>(last - first)};
}

}  // namespace

//-------------------------------------------------------------------------------------------------
// [SECTION] checkpoints
//-------------------------------------------------------------------------------------------------

void state_engine::restore(const engine_checkpoint& checkpoint) {
    segments_ = segment_map(checkpoint.segments.begin(), checkpoint.segments.end());
    segments_changed();
    blocks_.assign(checkpoint.blocks);
    stats_ = checkpoint.stats;
    next_number_ = checkpoint.next_number;
}

void state_engine::start(const engine_checkpoint& initial) {
    restore(initial);
    next_number_ = 0;
    for (auto& [address, blk] : blocks_) {
        blk.number = next_number_++;
    }
    stats_ = device_stats{};
    stats_.max_split_size = rules_.max_split_size_statistic();
    for (const auto& [address, seg] : segments_) {
        if (!seg.is_expandable) {
            set_current(stats_.segment, seg.is_large, 1);
        }
        set_current(stats_.reserved_bytes, seg.is_large, static_cast<int64_t>(seg.size));
        if (rules_.is_oversize(seg.size)) {
            set_current(stats_.oversize_segments, stats_.oversize_segments.current + 1);
        }
    }
    for (const auto& [address, blk] : blocks_) {
        const auto size = static_cast<int64_t>(blk.size);
        set_current(stats_.active, blk.is_large, 1);
        set_current(stats_.active_bytes, blk.is_large, size);
        set_current(stats_.requested_bytes, blk.is_large, static_cast<int64_t>(blk.requested_size));
        if (blk.state == block_state::active_allocated) {
            set_current(stats_.allocation, blk.is_large, 1);
            set_current(stats_.allocated_bytes, blk.is_large, size);
            if (rules_.is_oversize(blk.size)) {
                set_current(stats_.oversize_allocations, stats_.oversize_allocations.current + 1);
            }
        }
    }
    for (const auto& seg : materialize(0, 0, 0).segments) {
        if (seg.is_expandable || seg.blocks.size() < 2) {
            continue;
        }
        for (const auto& blk : seg.blocks) {
            if (blk.state == block_state::inactive) {
                set_current(stats_.inactive_split, seg.is_large, 1);
                set_current(stats_.inactive_split_bytes, seg.is_large,
                            static_cast<int64_t>(blk.size));
            }
        }
    }
}

engine_checkpoint state_engine::save(size_t position) const {
    engine_checkpoint checkpoint;
    checkpoint.position = position;
    checkpoint.segments.assign(segments_.begin(), segments_.end());
    checkpoint.blocks.assign(blocks_.begin(), blocks_.end());
    checkpoint.stats = stats_;
    checkpoint.next_number = next_number_;
    return checkpoint;
}

//-------------------------------------------------------------------------------------------------
// [SECTION] applying an entry
//-------------------------------------------------------------------------------------------------

entry_effect state_engine::apply(const snapshot::trace_entry& entry) {
    switch (entry.kind) {
        case action::alloc:
            return on_alloc(entry);
        case action::free_requested:
            return on_free_requested(entry);
        case action::free_completed:
            return on_free_completed(entry);
        case action::segment_alloc:
            return on_segment_alloc(entry);
        case action::segment_free:
            return on_segment_free(entry);
        case action::segment_map:
            return on_segment_map(entry);
        case action::segment_unmap:
            return on_segment_unmap(entry);
        case action::oom:
            ++stats_.num_ooms;
            return {};
        case action::snapshot:
        case action::annotation_start:
        case action::annotation_end:
        case action::annotation_marker:
            return {};
    }
    return {};
}

state_engine::segment_map::iterator state_engine::segment_containing(uint64_t address) {
    if (segment_index_stale_) {
        segment_starts_.clear();
        segment_index_.clear();
        for (auto it = segments_.begin(); it != segments_.end(); ++it) {
            segment_starts_.push_back(it->first);
            segment_index_.push_back(it);
        }
        segment_index_stale_ = false;
    }
    const size_t above =
        partition_point_index(segment_starts_.data(), segment_starts_.size(),
                              [address](uint64_t start) { return start <= address; });
    if (above == 0) {
        return segments_.end();
    }
    const auto it = segment_index_[above - 1];
    return address < it->first + it->second.size ? it : segments_.end();
}

std::pair<uint64_t, uint64_t> state_engine::free_range_around(
    segment_map::const_iterator seg, block_map::const_iterator next) const {
    const uint64_t segment_first = seg->first;
    const uint64_t segment_last = seg->first + seg->second.size;
    uint64_t last =
        (next != blocks_.end() && next->first < segment_last) ? next->first : segment_last;
    uint64_t first = segment_first;
    if (next != blocks_.begin()) {
        const auto previous = std::prev(next);
        if (previous->first >= segment_first) {
            first = previous->first + previous->second.size;
        }
    }
    return {first, std::max(first, last)};
}

void state_engine::change_inactive_split(bool is_large, int64_t count, int64_t bytes) {
    add(stats_.inactive_split, is_large, count);
    add(stats_.inactive_split_bytes, is_large, bytes);
}

//-------------------------------------------------------------------------------------------------
// [SECTION] allocations and frees
//-------------------------------------------------------------------------------------------------

entry_effect state_engine::on_alloc(const snapshot::trace_entry& entry) {
    entry_effect effect;
    const uint64_t address = entry.address;
    // One search finds both the neighbour above and where the new block goes.
    const auto next = blocks_.lower_bound(address);
    if (next != blocks_.end() && next->first == address) {
        effect.anomaly = true;
        return effect;
    }
    // A PyTorch trace records the request; memtrail's may record the block size as well.
    const uint64_t request = entry.requested_size != 0 ? entry.requested_size : entry.size;
    uint64_t size = std::max(rules_.round_size(request), entry.size);
    bool is_large = !size_rules::is_small_request(size);

    const auto seg = segment_containing(address);
    if (seg == segments_.end()) {
        effect.anomaly = true;
    } else {
        is_large = seg->second.is_large;
        const auto [first, last] = free_range_around(seg, next);
        if (address < first || address >= last) {
            effect.anomaly = true;
            return effect;
        }
        // The allocator takes the free block whole when the rest is too small to split off.
        size = std::min(size, last - address);
        const bool expandable = seg->second.is_expandable;
        if (!rules_.should_split(!is_large, expandable, size, last - address - size)) {
            size = last - address;
        }
        if (!expandable) {
            const uint64_t segment_first = seg->first;
            const uint64_t segment_last = seg->first + seg->second.size;
            const split_count before = split_of_range(first, last, segment_first, segment_last);
            const uint64_t left = address - first;
            const uint64_t right = last - (address + size);
            split_count after;
            if (before.blocks != 0 || left != 0 || right != 0) {
                after.blocks = (left != 0 ? 1 : 0) + (right != 0 ? 1 : 0);
                after.bytes = static_cast<int64_t>(left + right);
            }
            change_inactive_split(is_large, after.blocks - before.blocks,
                                  after.bytes - before.bytes);
        }
    }

    const uint64_t number = next_number_++;
    blocks_.insert(next, address,
                   engine_block{size, request, entry.time_ns, entry.stack,
                                block_state::active_allocated, is_large, number});
    const auto bytes = static_cast<int64_t>(size);
    add(stats_.allocation, is_large, 1);
    add(stats_.allocated_bytes, is_large, bytes);
    add(stats_.requested_bytes, is_large, static_cast<int64_t>(request));
    add(stats_.active, is_large, 1);
    add(stats_.active_bytes, is_large, bytes);
    if (rules_.is_oversize(size)) {
        stats_.oversize_allocations.increase(1);
    }
    effect.allocated = effect.active = bytes;
    effect.requested = static_cast<int64_t>(request);
    effect.stack = entry.stack;
    effect.block_size = size;
    effect.block_number = number;
    return effect;
}

entry_effect state_engine::on_free_requested(const snapshot::trace_entry& entry) {
    entry_effect effect;
    const auto it = blocks_.find(entry.address);
    if (it == blocks_.end() || it->second.state != block_state::active_allocated) {
        effect.anomaly = true;
        return effect;
    }
    engine_block& blk = it->second;
    blk.state = block_state::active_pending_free;
    add(stats_.allocation, blk.is_large, -1);
    add(stats_.allocated_bytes, blk.is_large, -static_cast<int64_t>(blk.size));
    if (rules_.is_oversize(blk.size)) {
        stats_.oversize_allocations.decrease(1);
    }
    effect.allocated = -static_cast<int64_t>(blk.size);
    effect.stack = blk.stack;
    effect.block_size = blk.size;
    effect.block_number = blk.number;
    return effect;
}

entry_effect state_engine::on_free_completed(const snapshot::trace_entry& entry) {
    entry_effect effect;
    const auto it = blocks_.find(entry.address);
    if (it == blocks_.end()) {
        effect.anomaly = true;
        return effect;
    }
    const engine_block blk = it->second;
    if (blk.state == block_state::active_allocated) {
        // The free request was not recorded (dropped entry): account for it here.
        effect = on_free_requested(entry);
        effect.anomaly = true;
    }
    release_block(it);
    effect.active = -static_cast<int64_t>(blk.size);
    effect.requested = -static_cast<int64_t>(blk.requested_size);
    effect.stack = blk.stack;
    effect.block_size = blk.size;
    effect.block_number = blk.number;
    return effect;
}

void state_engine::release_block(block_map::iterator it) {
    const uint64_t first = it->first;
    const engine_block blk = it->second;
    const uint64_t last = first + blk.size;
    const auto seg = segment_containing(first);
    if (seg != segments_.end() && !seg->second.is_expandable) {
        const uint64_t segment_first = seg->first;
        const uint64_t segment_last = seg->first + seg->second.size;
        const auto next = std::next(it);
        const uint64_t free_last =
            (next != blocks_.end() && next->first < segment_last) ? next->first : segment_last;
        uint64_t free_first = segment_first;
        if (it != blocks_.begin()) {
            const auto previous = std::prev(it);
            if (previous->first >= segment_first) {
                free_first = previous->first + previous->second.size;
            }
        }
        const uint64_t left = first > free_first ? first - free_first : 0;
        const uint64_t right = free_last > last ? free_last - last : 0;
        split_count before;
        if (left != 0 || right != 0 || first != segment_first || last != segment_last) {
            before.blocks = (left != 0 ? 1 : 0) + (right != 0 ? 1 : 0);
            before.bytes = static_cast<int64_t>(left + right);
        }
        const split_count after = split_of_range(
            std::min(free_first, first), std::max(free_last, last), segment_first, segment_last);
        change_inactive_split(seg->second.is_large, after.blocks - before.blocks,
                              after.bytes - before.bytes);
    }
    add(stats_.active, blk.is_large, -1);
    add(stats_.active_bytes, blk.is_large, -static_cast<int64_t>(blk.size));
    add(stats_.requested_bytes, blk.is_large, -static_cast<int64_t>(blk.requested_size));
    blocks_.erase(it);
}

//-------------------------------------------------------------------------------------------------
// [SECTION] segments and expandable pages
//-------------------------------------------------------------------------------------------------

entry_effect state_engine::on_segment_alloc(const snapshot::trace_entry& entry) {
    entry_effect effect;
    const uint64_t address = entry.address;
    const auto next = segments_.lower_bound(address);
    const bool overlaps_next = next != segments_.end() && next->first < address + entry.size;
    if (overlaps_next || segment_containing(address) != segments_.end() || entry.size == 0) {
        effect.anomaly = true;
        return effect;
    }
    // Small-pool segments are exactly one small buffer; large ones never are.
    const bool is_large = entry.size != size_rules::small_buffer;
    segments_changed();
    segments_.emplace(address, engine_segment{entry.size, entry.stream, entry.time_ns, entry.stack,
                                              is_large, false});
    add(stats_.segment, is_large, 1);
    add(stats_.reserved_bytes, is_large, static_cast<int64_t>(entry.size));
    if (rules_.is_oversize(entry.size)) {
        stats_.oversize_segments.increase(1);
    }
    ++stats_.num_device_alloc;
    effect.reserved = static_cast<int64_t>(entry.size);
    effect.stack = entry.stack;
    return effect;
}

entry_effect state_engine::on_segment_free(const snapshot::trace_entry& entry) {
    entry_effect effect;
    const auto seg = segments_.find(entry.address);
    if (seg == segments_.end()) {
        effect.anomaly = true;
        return effect;
    }
    const uint64_t last = seg->first + seg->second.size;
    // Blocks still held in a freed segment mean entries are missing: drop them with it.
    for (auto it = blocks_.lower_bound(seg->first); it != blocks_.end() && it->first < last;
         it = blocks_.lower_bound(seg->first)) {
        effect.anomaly = true;
        effect.allocated -= it->second.state == block_state::active_allocated
                                ? static_cast<int64_t>(it->second.size)
                                : 0;
        effect.active -= static_cast<int64_t>(it->second.size);
        effect.requested -= static_cast<int64_t>(it->second.requested_size);
        if (it->second.state == block_state::active_allocated) {
            on_free_requested(
                snapshot::trace_entry{.kind = action::free_requested, .address = it->first});
        }
        release_block(it);
    }
    const engine_segment released = seg->second;
    segments_.erase(seg);
    segments_changed();
    add(stats_.segment, released.is_large, -1);
    add(stats_.reserved_bytes, released.is_large, -static_cast<int64_t>(released.size));
    if (rules_.is_oversize(released.size)) {
        stats_.oversize_segments.decrease(1);
    }
    ++stats_.num_device_free;
    effect.reserved = -static_cast<int64_t>(released.size);
    effect.stack = released.stack;
    return effect;
}

entry_effect state_engine::on_segment_map(const snapshot::trace_entry& entry) {
    entry_effect effect;
    const uint64_t first = entry.address;
    const uint64_t last = first + entry.size;
    const auto next = segments_.lower_bound(first);
    if (entry.size == 0 || segment_containing(first) != segments_.end() ||
        (next != segments_.end() && next->first < last)) {
        effect.anomaly = true;
        return effect;
    }
    // Mapping grows an expandable segment; ranges that touch are one segment.
    auto below = first > 0 ? segment_containing(first - 1) : segments_.end();
    if (below != segments_.end() && !below->second.is_expandable) {
        below = segments_.end();
    }
    auto above = next != segments_.end() && next->first == last && next->second.is_expandable
                     ? next
                     : segments_.end();
    bool is_large = entry.size % size_rules::large_buffer == 0;
    segments_changed();
    if (below != segments_.end()) {
        is_large = below->second.is_large;
        below->second.size += entry.size;
        if (above != segments_.end()) {
            below->second.size += above->second.size;
            segments_.erase(above);
        }
    } else if (above != segments_.end()) {
        engine_segment grown = above->second;
        is_large = grown.is_large;
        grown.size += entry.size;
        segments_.erase(above);
        segments_.emplace(first, grown);
    } else {
        segments_.emplace(first, engine_segment{entry.size, entry.stream, entry.time_ns,
                                                entry.stack, is_large, true});
    }
    // PyTorch counts mapped bytes as reserved but expandable segments not as segments.
    add(stats_.reserved_bytes, is_large, static_cast<int64_t>(entry.size));
    ++stats_.num_device_alloc;
    effect.reserved = static_cast<int64_t>(entry.size);
    effect.stack = entry.stack;
    return effect;
}

entry_effect state_engine::on_segment_unmap(const snapshot::trace_entry& entry) {
    entry_effect effect;
    const auto seg = segment_containing(entry.address);
    if (seg == segments_.end() || entry.size == 0 ||
        entry.address + entry.size > seg->first + seg->second.size) {
        effect.anomaly = true;
        return effect;
    }
    const uint64_t first = entry.address;
    const uint64_t last = first + entry.size;
    for (auto it = blocks_.lower_bound(first); it != blocks_.end() && it->first < last;
         it = blocks_.lower_bound(first)) {
        effect.anomaly = true;
        if (it->second.state == block_state::active_allocated) {
            effect.allocated -= static_cast<int64_t>(it->second.size);
            on_free_requested(
                snapshot::trace_entry{.kind = action::free_requested, .address = it->first});
        }
        effect.active -= static_cast<int64_t>(it->second.size);
        effect.requested -= static_cast<int64_t>(it->second.requested_size);
        release_block(it);
    }
    const uint64_t segment_first = seg->first;
    const uint64_t segment_last = seg->first + seg->second.size;
    const engine_segment original = seg->second;
    segments_.erase(seg);
    segments_changed();
    if (first > segment_first) {
        engine_segment left = original;
        left.size = first - segment_first;
        segments_.emplace(segment_first, left);
    }
    if (last < segment_last) {
        engine_segment right = original;
        right.size = segment_last - last;
        segments_.emplace(last, right);
    }
    add(stats_.reserved_bytes, original.is_large, -static_cast<int64_t>(entry.size));
    ++stats_.num_device_free;
    effect.reserved = -static_cast<int64_t>(entry.size);
    effect.stack = original.stack;
    return effect;
}

//-------------------------------------------------------------------------------------------------
// [SECTION] the state as a snapshot
//-------------------------------------------------------------------------------------------------

memory_state state_engine::materialize(int device, size_t position, int64_t time_ns) const {
    memory_state state;
    state.device = device;
    state.position = position;
    state.time_ns = time_ns;
    state.stats = stats_;
    state.segments.reserve(segments_.size());
    for (const auto& [segment_first, seg] : segments_) {
        snapshot::segment out;
        out.device = static_cast<int8_t>(device);
        out.address = segment_first;
        out.total_size = seg.size;
        out.stream = seg.stream;
        out.is_large = seg.is_large;
        out.is_expandable = seg.is_expandable;
        out.stack = seg.stack;
        out.time_ns = seg.time_ns;
        const uint64_t segment_last = segment_first + seg.size;
        uint64_t cursor = segment_first;
        for (auto it = blocks_.lower_bound(segment_first);
             it != blocks_.end() && it->first < segment_last; ++it) {
            const engine_block& blk = it->second;
            if (it->first > cursor) {
                out.blocks.push_back(snapshot::block{cursor, it->first - cursor, 0,
                                                     block_state::inactive, snapshot::no_id, 0});
            }
            out.blocks.push_back(snapshot::block{it->first, blk.size, blk.requested_size, blk.state,
                                                 blk.stack, blk.time_ns});
            out.active_size += blk.size;
            out.requested_size += blk.requested_size;
            if (blk.state == block_state::active_allocated) {
                out.allocated_size += blk.size;
            }
            cursor = it->first + blk.size;
        }
        if (cursor < segment_last) {
            out.blocks.push_back(snapshot::block{cursor, segment_last - cursor, 0,
                                                 block_state::inactive, snapshot::no_id, 0});
        }
        state.segments.push_back(std::move(out));
    }
    return state;
}

}  // namespace memtrail::analysis::detail

#pragma once
// Replays trace entries on a compact allocator state: segments and the blocks callers hold (free
// ranges are the gaps between them, as the allocator always merges neighbouring free blocks).
// The device model runs it once over the whole trace and again from checkpoints to answer
// queries, so one entry's effect is computed in exactly one place.

#include <cstdint>
#include <map>
#include <utility>
#include <vector>

#include "allocator_rules.hpp"
#include "memtrail/analysis/memory_state.hpp"
#include "memtrail/rules/statistics.hpp"
#include "memtrail/snapshot/model.hpp"
#include "ordered_address_map.hpp"

namespace memtrail::analysis::detail {

struct engine_segment {
    uint64_t size = 0;
    uint64_t stream = 0;
    int64_t time_ns = 0;
    snapshot::stack_id stack = snapshot::no_id;
    bool is_large = true;
    bool is_expandable = false;
};

// A block a caller holds or has freed while other streams still use it.
struct engine_block {
    uint64_t size = 0;
    uint64_t requested_size = 0;
    int64_t time_ns = 0;
    snapshot::stack_id stack = snapshot::no_id;
    snapshot::block_state state = snapshot::block_state::active_allocated;
    bool is_large = true;
    // Allocations are numbered in the order they happen, the blocks live at the start first
    // (by address): the device model's lifetimes use these numbers as indices.
    uint64_t number = 0;
};

// What one entry changed.
struct entry_effect {
    int64_t allocated = 0;  // byte deltas
    int64_t active = 0;
    int64_t reserved = 0;
    int64_t requested = 0;
    snapshot::stack_id stack = snapshot::no_id;  // the block's allocation stack
    uint64_t block_size = 0;  // the block's size (alloc and free kinds); 0: no block concerned
    uint64_t block_number = 0;
    bool anomaly = false;  // the entry does not fit the state: entries dropped or out of order
};

// A copy of the engine's state, sorted by address.
struct engine_checkpoint {
    size_t position = 0;
    std::vector<std::pair<uint64_t, engine_segment>> segments;
    std::vector<std::pair<uint64_t, engine_block>> blocks;
    device_stats stats;
    uint64_t next_number = 0;
};

class state_engine {
  public:
    explicit state_engine(const allocator_rules& rules) : rules_(rules) {}

    // Starts from the given segments and blocks, numbering the blocks in address order; the
    // counters start at their current values.
    void start(const engine_checkpoint& initial);
    void restore(const engine_checkpoint& checkpoint);
    engine_checkpoint save(size_t position) const;

    entry_effect apply(const snapshot::trace_entry& entry);

    memory_state materialize(int device, size_t position, int64_t time_ns) const;
    const device_stats& stats() const { return stats_; }
    size_t live_count() const { return segments_.size() + blocks_.size(); }

  private:
    using segment_map = std::map<uint64_t, engine_segment>;
    using block_map = ordered_address_map<engine_block>;

    entry_effect on_alloc(const snapshot::trace_entry& entry);
    entry_effect on_free_requested(const snapshot::trace_entry& entry);
    entry_effect on_free_completed(const snapshot::trace_entry& entry);
    entry_effect on_segment_alloc(const snapshot::trace_entry& entry);
    entry_effect on_segment_free(const snapshot::trace_entry& entry);
    entry_effect on_segment_map(const snapshot::trace_entry& entry);
    entry_effect on_segment_unmap(const snapshot::trace_entry& entry);

    segment_map::iterator segment_containing(uint64_t address);
    void segments_changed() { segment_index_stale_ = true; }
    // The free range [first, second) inside segment `seg` that ends at block `next` (the first
    // block at or above the address of interest) or at the segment's end.
    std::pair<uint64_t, uint64_t> free_range_around(segment_map::const_iterator seg,
                                                    block_map::const_iterator next) const;
    void release_block(block_map::iterator block);
    void change_inactive_split(bool is_large, int64_t count, int64_t bytes);

    allocator_rules rules_;
    segment_map segments_;
    // Segment starts in a flat array for the lookup nearly every entry makes; rebuilt after the
    // rare entries that add or remove segments.
    std::vector<uint64_t> segment_starts_;
    std::vector<segment_map::iterator> segment_index_;
    bool segment_index_stale_ = true;
    block_map blocks_;
    device_stats stats_;
    uint64_t next_number_ = 0;
};

}  // namespace memtrail::analysis::detail

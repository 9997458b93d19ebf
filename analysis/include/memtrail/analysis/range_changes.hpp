#pragma once
// What a range of positions changed in a device's memory: the state at its end, the blocks
// allocated inside it that are still there at its end, the space that was allocated at its start
// and is free at its end, and the segments it reserved. The viewer's range selection shows the
// segments and the flame graph of a range from this.

#include <cstddef>
#include <cstdint>
#include <unordered_set>
#include <utility>
#include <vector>

#include "memtrail/analysis/device_model.hpp"
#include "memtrail/analysis/memory_state.hpp"

namespace memtrail::analysis {

struct range_changes {
    size_t first = 0;  // positions, first <= last
    size_t last = 0;
    memory_state at_end;  // the state at `last`
    // Addresses of the blocks of `at_end` whose allocation is in (first, last]: what the range
    // added and kept (allocated or pending free at its end).
    std::unordered_set<uint64_t> new_blocks;
    // [address, end) spans free at `last` that were allocated or pending free at `first`,
    // ascending: what the range gave back to the segments.
    std::vector<std::pair<uint64_t, uint64_t>> freed;
    // Addresses of the segments of `at_end` that were not reserved at `first`.
    std::unordered_set<uint64_t> new_segments;

    bool is_new_block(uint64_t address) const { return new_blocks.count(address) != 0; }
    bool is_new_segment(uint64_t address) const { return new_segments.count(address) != 0; }
};

// The changes over [first, last]; both are clamped to the trace and put in order.
range_changes changes_over(const device_model& model, size_t first, size_t last);

}  // namespace memtrail::analysis

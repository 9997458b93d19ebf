#pragma once
// The allocator's state at one moment of a device's trace, as the analysis reconstructs it:
// segments tiled by blocks (allocated, pending free, free) and the counters of
// torch.cuda.memory_stats() at that moment.

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "memtrail/rules/statistics.hpp"
#include "memtrail/snapshot/model.hpp"

namespace memtrail::analysis {

struct memory_state {
    int device = 0;
    size_t position = 0;  // how many trace entries have been applied (0: before the first)
    int64_t time_ns = 0;  // time of the last applied entry; 0 at position 0
    // Sorted by address; each segment's blocks tile it, free ranges included as inactive blocks.
    std::vector<snapshot::segment> segments;
    // Counters as the trace implies them. Peaks and sums start from the trace's first entry, so
    // they are PyTorch's own only when the trace starts from an empty allocator.
    device_stats stats;
};

// Byte and block totals of a state. `rounding_waste` is block size minus requested size summed
// over allocated and pending-free blocks.
struct memory_totals {
    uint64_t reserved = 0;
    uint64_t allocated = 0;     // blocks a caller holds
    uint64_t pending_free = 0;  // freed by the caller, waiting for other streams
    uint64_t free = 0;          // inactive blocks inside segments
    uint64_t requested = 0;     // what callers asked for, over allocated and pending-free blocks
    uint64_t rounding_waste = 0;
    uint64_t largest_free = 0;  // largest inactive block
    size_t segments = 0;
    size_t allocated_blocks = 0;
    size_t pending_free_blocks = 0;
    size_t free_blocks = 0;

    uint64_t active() const { return allocated + pending_free; }
    // 1 - largest free block / free bytes inside segments; 0 when nothing is free.
    double fragmentation() const;
};

memory_totals totals_of(const std::vector<snapshot::segment>& segments);
inline memory_totals totals_of(const memory_state& state) {
    return totals_of(state.segments);
}

// PyTorch's memory_summary() table for the state's counters. Retries and stream
// synchronisations leave no trace entry, so those lines read 0.
std::string format_summary(const memory_state& state, bool abbreviated = false);

}  // namespace memtrail::analysis

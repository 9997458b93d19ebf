#pragma once
// Per-segment usage and the totals over all segments, in the spirit of PyTorch's
// `_memory_viz.py stats`: how much of each segment callers hold, how much waits for other
// streams, how much is free and in how large a piece.

#include <cstddef>
#include <cstdint>
#include <vector>

#include "memtrail/analysis/memory_state.hpp"

namespace memtrail::analysis {

struct segment_usage {
    uint64_t address = 0;
    uint64_t total_size = 0;
    uint64_t stream = 0;
    bool is_large = true;
    bool is_expandable = false;
    uint64_t allocated = 0;
    uint64_t pending_free = 0;
    uint64_t free = 0;
    uint64_t largest_free = 0;
    uint64_t requested = 0;  // over allocated and pending-free blocks
    size_t blocks = 0;       // free blocks included
    size_t allocated_blocks = 0;
    size_t pending_free_blocks = 0;

    // 1 - largest free block / free bytes; 0 when nothing is free.
    double fragmentation() const;
};

struct segment_summary {
    std::vector<segment_usage> segments;  // by address
    memory_totals totals;
};

segment_summary summarize_segments(const std::vector<snapshot::segment>& segments);
inline segment_summary summarize_segments(const memory_state& state) {
    return summarize_segments(state.segments);
}

}  // namespace memtrail::analysis

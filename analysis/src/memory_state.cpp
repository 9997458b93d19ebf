#include "memtrail/analysis/memory_state.hpp"

#include <algorithm>

namespace memtrail::analysis {

double memory_totals::fragmentation() const {
    if (free == 0) {
        return 0.0;
    }
    return 1.0 - static_cast<double>(largest_free) / static_cast<double>(free);
}

memory_totals totals_of(const std::vector<snapshot::segment>& segments) {
    memory_totals totals;
    totals.segments = segments.size();
    for (const auto& seg : segments) {
        totals.reserved += seg.total_size;
        for (const auto& blk : seg.blocks) {
            switch (blk.state) {
                case snapshot::block_state::active_allocated:
                    totals.allocated += blk.size;
                    ++totals.allocated_blocks;
                    break;
                case snapshot::block_state::active_pending_free:
                    totals.pending_free += blk.size;
                    ++totals.pending_free_blocks;
                    break;
                case snapshot::block_state::inactive:
                    totals.free += blk.size;
                    totals.largest_free = std::max(totals.largest_free, blk.size);
                    ++totals.free_blocks;
                    continue;
            }
            totals.requested += blk.requested_size;
            totals.rounding_waste += blk.size - std::min(blk.size, blk.requested_size);
        }
    }
    return totals;
}

std::string format_summary(const memory_state& state, bool abbreviated) {
    return format_memory_summary(state.stats, state.device, abbreviated);
}

}  // namespace memtrail::analysis

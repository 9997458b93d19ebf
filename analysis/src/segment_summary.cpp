#include "memtrail/analysis/segment_summary.hpp"

#include <algorithm>

namespace memtrail::analysis {

double segment_usage::fragmentation() const {
    if (free == 0) {
        return 0.0;
    }
    return 1.0 - static_cast<double>(largest_free) / static_cast<double>(free);
}

segment_summary summarize_segments(const std::vector<snapshot::segment>& segments) {
    segment_summary summary;
    summary.totals = totals_of(segments);
    summary.segments.reserve(segments.size());
    for (const auto& seg : segments) {
        segment_usage usage;
        usage.address = seg.address;
        usage.total_size = seg.total_size;
        usage.stream = seg.stream;
        usage.is_large = seg.is_large;
        usage.is_expandable = seg.is_expandable;
        usage.blocks = seg.blocks.size();
        for (const auto& blk : seg.blocks) {
            switch (blk.state) {
                case snapshot::block_state::active_allocated:
                    usage.allocated += blk.size;
                    usage.requested += blk.requested_size;
                    ++usage.allocated_blocks;
                    break;
                case snapshot::block_state::active_pending_free:
                    usage.pending_free += blk.size;
                    usage.requested += blk.requested_size;
                    ++usage.pending_free_blocks;
                    break;
                case snapshot::block_state::inactive:
                    usage.free += blk.size;
                    usage.largest_free = std::max(usage.largest_free, blk.size);
                    break;
            }
        }
        summary.segments.push_back(usage);
    }
    return summary;
}

}  // namespace memtrail::analysis

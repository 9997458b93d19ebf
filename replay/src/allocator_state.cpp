#include "allocator_state.hpp"

namespace memtrail::replay::detail {

void append_allocator_segments(snapshot::snapshot& out, const device_allocator& allocator,
                               int device) {
    for (const segment_info& s : allocator.snapshot(false)) {
        snapshot::segment& seg = out.segments.emplace_back();
        seg.device = static_cast<int8_t>(device);
        seg.address = s.address;
        seg.total_size = s.total_size;
        seg.allocated_size = s.allocated_size;
        seg.active_size = s.active_size;
        seg.requested_size = s.requested_size;
        seg.stream = s.stream;
        seg.is_large = s.is_large;
        seg.is_expandable = s.is_expandable;
        seg.pool_id_first = s.pool.first;
        seg.pool_id_second = s.pool.second;
        for (const block_info& b : s.blocks) {
            snapshot::block& blk = seg.blocks.emplace_back();
            blk.address = b.address;
            blk.size = b.size;
            blk.requested_size = b.requested_size;
            blk.state = b.allocated ? snapshot::block_state::active_allocated
                        : b.active  ? snapshot::block_state::active_pending_free
                                    : snapshot::block_state::inactive;
        }
    }
}

}  // namespace memtrail::replay::detail

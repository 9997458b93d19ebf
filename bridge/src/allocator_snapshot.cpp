#include "memtrail/bridge/allocator_snapshot.hpp"

#include <type_traits>

#include "memtrail/rules/size_rules.hpp"

namespace memtrail::bridge {

namespace {

// A segment and its blocks are copied field by field: each field has the same type on both sides,
// so no address, size, stream or pool is ever narrowed (the device number, an int, is checked
// against int8_t by the model's readers and cast below).
template <class A, class B>
constexpr bool same_type = std::is_same_v<A, B>;
static_assert(same_type<decltype(segment_info::address), decltype(snapshot::segment::address)>);
static_assert(
    same_type<decltype(segment_info::total_size), decltype(snapshot::segment::total_size)>);
static_assert(
    same_type<decltype(segment_info::allocated_size), decltype(snapshot::segment::allocated_size)>);
static_assert(
    same_type<decltype(segment_info::active_size), decltype(snapshot::segment::active_size)>);
static_assert(
    same_type<decltype(segment_info::requested_size), decltype(snapshot::segment::requested_size)>);
static_assert(same_type<decltype(segment_info::stream), decltype(snapshot::segment::stream)>);
static_assert(same_type<decltype(segment_info::is_large), decltype(snapshot::segment::is_large)>);
static_assert(
    same_type<decltype(segment_info::is_expandable), decltype(snapshot::segment::is_expandable)>);
static_assert(same_type<decltype(pool_id::first), decltype(snapshot::segment::pool_id_first)>);
static_assert(same_type<decltype(pool_id::second), decltype(snapshot::segment::pool_id_second)>);
static_assert(same_type<decltype(block_info::address), decltype(snapshot::block::address)>);
static_assert(same_type<decltype(block_info::size), decltype(snapshot::block::size)>);
static_assert(
    same_type<decltype(block_info::requested_size), decltype(snapshot::block::requested_size)>);

snapshot::block_state state_of(const block_info& b) {
    if (b.allocated) {
        return snapshot::block_state::active_allocated;
    }
    return b.active ? snapshot::block_state::active_pending_free : snapshot::block_state::inactive;
}

}  // namespace

snapshot::allocator_settings to_snapshot_settings(const allocator_config& config) {
    snapshot::allocator_settings settings;
    settings.conf = config.source;
    settings.max_split_size = size_rules::max_split_size_statistic(config.max_split_size);
    settings.max_non_split_rounding_size = config.max_non_split_rounding_size;
    settings.garbage_collection_threshold = config.garbage_collection_threshold;
    settings.expandable_segments = config.expandable_segments;
    settings.roundup_power2_divisions = config.roundup_power2_divisions;
    return settings;
}

snapshot::segment to_snapshot_segment(const segment_info& info, int device) {
    snapshot::segment seg;
    seg.device = static_cast<int8_t>(device);
    seg.address = info.address;
    seg.total_size = info.total_size;
    seg.allocated_size = info.allocated_size;
    seg.active_size = info.active_size;
    seg.requested_size = info.requested_size;
    seg.stream = info.stream;
    seg.is_large = info.is_large;
    seg.is_expandable = info.is_expandable;
    seg.pool_id_first = info.pool.first;
    seg.pool_id_second = info.pool.second;
    seg.blocks.reserve(info.blocks.size());
    for (const block_info& b : info.blocks) {
        snapshot::block& blk = seg.blocks.emplace_back();
        blk.address = b.address;
        blk.size = b.size;
        blk.requested_size = b.requested_size;
        blk.state = state_of(b);
    }
    return seg;
}

}  // namespace memtrail::bridge

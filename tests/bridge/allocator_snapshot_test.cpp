// The allocator's actions, settings and segments in the snapshot model's terms.

#include <gtest/gtest.h>

#include "memtrail/bridge/allocator_snapshot.hpp"
#include "memtrail/core/simulated_device.hpp"

namespace memtrail::bridge {
namespace {

constexpr uint64_t MiB = 1ull << 20;

TEST(AllocatorSnapshot, EveryActionKeepsItsName) {
    const std::pair<allocator_action, const char*> expected[] = {
        {allocator_action::alloc, "alloc"},
        {allocator_action::free_requested, "free_requested"},
        {allocator_action::free_completed, "free_completed"},
        {allocator_action::segment_alloc, "segment_alloc"},
        {allocator_action::segment_free, "segment_free"},
        {allocator_action::segment_map, "segment_map"},
        {allocator_action::segment_unmap, "segment_unmap"},
        {allocator_action::snapshot, "snapshot"},
        {allocator_action::oom, "oom"},
    };
    for (const auto& [action, name] : expected) {
        EXPECT_EQ(snapshot::action_name(to_snapshot_action(action)), name);
    }
}

TEST(AllocatorSnapshot, OnlyAllocAndFreeEntriesCarryTheRequest) {
    EXPECT_EQ(requested_size_of(snapshot::action::alloc, 1000), 1000u);
    EXPECT_EQ(requested_size_of(snapshot::action::free_requested, 1000), 1000u);
    EXPECT_EQ(requested_size_of(snapshot::action::free_completed, 1000), 1000u);
    EXPECT_EQ(requested_size_of(snapshot::action::segment_alloc, 2 * MiB), 0u);
    EXPECT_EQ(requested_size_of(snapshot::action::oom, 2 * MiB), 0u);
}

TEST(AllocatorSnapshot, SettingsKeepTheConfigurationAndItsSource) {
    const char* conf = "max_split_size_mb:64,expandable_segments:True,roundup_power2_divisions:4";
    const snapshot::allocator_settings settings =
        to_snapshot_settings(allocator_config::parse(conf));
    EXPECT_EQ(settings.conf, conf);
    EXPECT_EQ(settings.max_split_size, int64_t(64 * MiB));
    EXPECT_EQ(settings.max_non_split_rounding_size, 20 * MiB);
    EXPECT_TRUE(settings.expandable_segments);
    EXPECT_EQ(settings.roundup_power2_divisions, std::vector<uint64_t>(16, 4));
    EXPECT_EQ(to_snapshot_settings(allocator_config{}).max_split_size, -1);
}

TEST(AllocatorSnapshot, SegmentsKeepTheirBlocksAndStates) {
    simulated_device dev;
    dev.set_events_complete_immediately(false);
    device_allocator allocator(dev);
    const stream_handle stream = 7;
    const device_address held = allocator.allocate(1000, stream);
    const device_address pending = allocator.allocate(3000, stream);
    allocator.record_stream(pending, stream + 1);
    allocator.free(pending);

    const std::vector<segment_info> segments = allocator.snapshot(false);
    ASSERT_EQ(segments.size(), 1u);
    const snapshot::segment seg = to_snapshot_segment(segments[0], 3);
    EXPECT_EQ(seg.device, 3);
    EXPECT_EQ(seg.address, held);
    EXPECT_EQ(seg.total_size, 2 * MiB);
    EXPECT_EQ(seg.allocated_size, 1024u);
    EXPECT_EQ(seg.active_size, 1024u + 3072u);
    EXPECT_EQ(seg.requested_size, segments[0].requested_size);
    EXPECT_EQ(seg.stream, stream);
    EXPECT_FALSE(seg.is_large);
    EXPECT_FALSE(seg.is_expandable);
    EXPECT_EQ(seg.stack, snapshot::no_id);
    ASSERT_EQ(seg.blocks.size(), 3u);
    EXPECT_EQ(seg.blocks[0].address, held);
    EXPECT_EQ(seg.blocks[0].size, 1024u);
    EXPECT_EQ(seg.blocks[0].requested_size, 1000u);
    EXPECT_EQ(seg.blocks[0].state, snapshot::block_state::active_allocated);
    EXPECT_EQ(seg.blocks[1].address, pending);
    EXPECT_EQ(seg.blocks[1].state, snapshot::block_state::active_pending_free);
    EXPECT_EQ(seg.blocks[2].size, 2 * MiB - 1024 - 3072);
    EXPECT_EQ(seg.blocks[2].state, snapshot::block_state::inactive);
}

}  // namespace
}  // namespace memtrail::bridge

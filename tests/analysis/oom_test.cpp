// The three kinds of OOM, built by hand: a request that fails although enough memory is free in
// pieces, one that fails because freed blocks wait for other streams, and one where the memory
// is really in use.

#include <gtest/gtest.h>

#include <memory>

#include "memtrail/analysis/oom_report.hpp"
#include "memtrail/analysis/segment_summary.hpp"
#include "reference_allocator.hpp"

namespace memtrail::analysis {
namespace {

constexpr uint64_t mib = 1ull << 20;

struct oom_case {
    std::shared_ptr<snapshot::snapshot> snap;
    uint64_t middle = 0;  // the block between the two free ranges
};

// One 30 MiB segment cut into three 10 MiB blocks; the outer two are freed, the middle one is
// freed too when `middle` is "pending" and kept otherwise. Then a 20 MiB request fails with
// `device_free` bytes left on the device.
oom_case make_case(bool middle_pending, uint64_t device_free) {
    oom_case c;
    c.snap = std::make_shared<snapshot::snapshot>();
    c.snap->info.devices.push_back(snapshot::device_properties{0, "test", 64 * mib, 9, 0, 132});
    const auto stacks = testing::make_stacks(*c.snap, 3);
    testing::reference_allocator allocator(*c.snap);
    allocator.free(allocator.allocate(30 * mib, 7, stacks[0]), false);
    const uint64_t a = allocator.allocate(10 * mib, 7, stacks[0]);
    c.middle = allocator.allocate(10 * mib, 7, stacks[1]);
    const uint64_t b = allocator.allocate(10 * mib, 7, stacks[2]);
    allocator.free(a, false);
    allocator.free(b, false);
    if (middle_pending) {
        allocator.free(c.middle, true);
    }
    snapshot::trace_entry oom;
    oom.kind = snapshot::action::oom;
    oom.address = device_free;
    oom.size = 20 * mib;
    oom.stream = 7;
    oom.stack = stacks[2];
    c.snap->trace_for(0).entries.push_back(oom);
    allocator.finish();
    return c;
}

TEST(oom, free_memory_in_pieces_is_fragmentation_with_the_middle_block_blocking) {
    const oom_case c = make_case(false, 4 * mib);
    const device_model model = device_model::build(c.snap, 0);
    const auto entries = oom_entries(model);
    ASSERT_EQ(entries.size(), 1u);
    const oom_report report = analyze_oom(model, entries[0]);
    EXPECT_EQ(report.requested, 20 * mib);
    EXPECT_EQ(report.stream, 7u);
    EXPECT_EQ(report.device_free, 4 * mib);
    EXPECT_EQ(report.device_total, 64 * mib);
    EXPECT_EQ(report.totals.reserved, 30 * mib);
    EXPECT_EQ(report.totals.allocated, 10 * mib);
    EXPECT_EQ(report.totals.free, 20 * mib);
    EXPECT_DOUBLE_EQ(report.fragmentation, 0.5);
    ASSERT_EQ(report.free_by_pool.size(), 1u);
    EXPECT_EQ(report.free_by_pool[0].largest_free, 10 * mib);
    ASSERT_EQ(report.blockers.size(), 1u);
    EXPECT_EQ(report.blockers[0].live_bytes, 10 * mib);
    EXPECT_EQ(report.blockers[0].range_size, 20 * mib);
    ASSERT_EQ(report.blockers[0].blocks.size(), 1u);
    EXPECT_EQ(report.blockers[0].blocks[0].address, c.middle);
    EXPECT_FALSE(report.blockers[0].only_pending_frees());
    EXPECT_EQ(report.verdict, oom_verdict::fragmentation);
    EXPECT_FALSE(report.explanation.empty());
    // The one live block holds the memory, under its own stack.
    ASSERT_EQ(report.holders.size(), 1u);
    EXPECT_EQ(report.holders[0].bytes, 10 * mib);
    EXPECT_EQ(report.holders[0].blocks, 1u);
    EXPECT_NE(report.holders[0].stack, snapshot::no_id);
}

TEST(oom, blocks_waiting_for_other_streams_are_named) {
    const oom_case c = make_case(true, 4 * mib);
    const device_model model = device_model::build(c.snap, 0);
    const oom_report report = analyze_oom(model, oom_entries(model)[0]);
    EXPECT_EQ(report.totals.pending_free, 10 * mib);
    ASSERT_FALSE(report.blockers.empty());
    EXPECT_TRUE(report.blockers[0].only_pending_frees());
    EXPECT_EQ(report.verdict, oom_verdict::pending_cross_stream_frees);
}

TEST(oom, memory_really_in_use_is_capacity_and_its_holders_are_named) {
    auto snap = std::make_shared<snapshot::snapshot>();
    const auto stacks = testing::make_stacks(*snap, 2);
    testing::reference_allocator allocator(*snap);
    allocator.allocate(30 * mib, 7, snapshot::no_id);
    for (int i = 0; i < 3; ++i) {
        allocator.allocate(12 * mib, 7, stacks[0]);
    }
    allocator.allocate(20 * mib, 7, stacks[1]);
    snapshot::trace_entry oom;
    oom.kind = snapshot::action::oom;
    oom.address = 2 * mib;
    oom.size = 20 * mib;
    oom.stream = 7;
    snap->trace_for(0).entries.push_back(oom);
    allocator.finish();
    const device_model model = device_model::build(snap, 0);
    const oom_report report = analyze_oom(model, oom_entries(model)[0]);
    EXPECT_EQ(report.verdict, oom_verdict::capacity);
    EXPECT_TRUE(report.blockers.empty());
    // Largest first: 36 MiB in three blocks, 30 MiB without a stack, 20 MiB in one block.
    ASSERT_EQ(report.holders.size(), 3u);
    EXPECT_EQ(report.holders[0].bytes, 36 * mib);
    EXPECT_EQ(report.holders[0].blocks, 3u);
    EXPECT_EQ(report.holders[0].stack, stacks[0]);
    EXPECT_EQ(report.holders[1].bytes, 30 * mib);
    EXPECT_EQ(report.holders[1].stack, snapshot::no_id);
    EXPECT_EQ(report.holders[2].bytes, 20 * mib);
    EXPECT_EQ(report.holders[2].stack, stacks[1]);
    EXPECT_EQ(analyze_oom(model, oom_entries(model)[0], analysis::oom_options{.max_blockers = 1}).holders.size(), 1u);
    EXPECT_EQ(report.device_total, 0u);
    EXPECT_THROW(analyze_oom(model, 0), std::invalid_argument);
}

TEST(segment_summary, per_segment_usage_and_totals) {
    const oom_case c = make_case(true, 0);
    const device_model model = device_model::build(c.snap, 0);
    const segment_summary summary = summarize_segments(model.state_after(model.event_count()));
    ASSERT_EQ(summary.segments.size(), 1u);
    const segment_usage& seg = summary.segments[0];
    EXPECT_EQ(seg.total_size, 30 * mib);
    EXPECT_EQ(seg.allocated, 0u);
    EXPECT_EQ(seg.pending_free, 10 * mib);
    EXPECT_EQ(seg.free, 20 * mib);
    EXPECT_EQ(seg.largest_free, 10 * mib);
    EXPECT_EQ(seg.blocks, 3u);
    EXPECT_DOUBLE_EQ(seg.fragmentation(), 0.5);
    EXPECT_EQ(summary.totals.reserved, 30 * mib);
    EXPECT_EQ(summary.totals.active(), 10 * mib);
}

}  // namespace
}  // namespace memtrail::analysis

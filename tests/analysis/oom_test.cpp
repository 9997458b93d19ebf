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
    // 86 MiB reserved and 2 MiB free: the whole device, as --device-memory says.
    const oom_report report =
        analyze_oom(model, oom_entries(model)[0], oom_options{.device_total = 88 * mib});
    EXPECT_EQ(report.verdict, oom_verdict::capacity);
    EXPECT_FALSE(report.secondary);
    EXPECT_EQ(report.total_source, device_total_source::option);
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
    EXPECT_EQ(analyze_oom(model, oom_entries(model)[0], analysis::oom_options{.max_blockers = 1})
                  .holders.size(),
              1u);
    EXPECT_THROW(analyze_oom(model, 0), std::invalid_argument);

    // Without the device's total, 88 MiB held and free is far below any GPU's memory: the rest
    // of the device was held by others, never "capacity".
    const oom_report unknown_total = analyze_oom(model, oom_entries(model)[0]);
    EXPECT_EQ(unknown_total.device_total, 0u);
    EXPECT_EQ(unknown_total.verdict, oom_verdict::outside_allocator);
    EXPECT_EQ(unknown_total.total_source, device_total_source::at_least);
    EXPECT_EQ(unknown_total.assumed_device_total, 88 * mib);
    EXPECT_NE(unknown_total.explanation.find("--device-memory"), std::string::npos);
}

// 4 segments of 24 MiB, each half live: 48 MiB free in 12 MiB holes. A 16 MiB request then fails
// with the device nearly empty: the allocator refused it on a cap the snapshot does not record.
std::shared_ptr<snapshot::snapshot> holes_under_a_cap(uint64_t freed_before = 0) {
    auto snap = std::make_shared<snapshot::snapshot>();
    const auto stacks = testing::make_stacks(*snap, 1);
    testing::reference_allocator allocator(*snap);
    if (freed_before) {
        allocator.free(allocator.allocate(freed_before, 0, stacks[0]), false);
        allocator.empty_cache();
    }
    std::vector<uint64_t> whole;
    for (int i = 0; i < 4; ++i) {
        whole.push_back(allocator.allocate(24 * mib, 0, stacks[0]));
    }
    for (uint64_t a : whole) {
        allocator.free(a, false);
    }
    for (int i = 0; i < 8; ++i) {
        const uint64_t a = allocator.allocate(12 * mib, 0, stacks[0]);
        if (i % 2) {
            allocator.free(a, false);
        }
    }
    snapshot::trace_entry oom;
    oom.kind = snapshot::action::oom;
    oom.address = 70ull << 30;
    oom.size = 16 * mib;
    snap->trace_for(0).entries.push_back(oom);
    allocator.finish();
    return snap;
}

TEST(oom, holes_under_a_cap_are_fragmentation_first_and_the_cap_second) {
    const device_model model = device_model::build(holes_under_a_cap(), 0);
    const oom_report report = analyze_oom(model, oom_entries(model)[0]);
    EXPECT_EQ(report.verdict, oom_verdict::fragmentation);
    ASSERT_TRUE(report.secondary);
    EXPECT_EQ(*report.secondary, oom_verdict::memory_cap);
    // The cap: at least the 96 MiB ever reserved, below 96 + 16 MiB.
    EXPECT_TRUE(report.cap.binding);
    EXPECT_FALSE(report.cap.recorded);
    EXPECT_EQ(report.cap.lower, 96 * mib);
    EXPECT_EQ(report.cap.upper, 112 * mib);
    EXPECT_EQ(report.usable_free, 48 * mib);
    EXPECT_EQ(report.assumed_device_total, 96 * mib + (70ull << 30));

    // A fraction given with the total makes the cap exact.
    const oom_report given =
        analyze_oom(model, oom_entries(model)[0],
                    oom_options{.device_total = 1ull << 30, .memory_fraction = 100.0 / 1024.0});
    EXPECT_TRUE(given.cap.recorded);
    EXPECT_EQ(given.cap.lower, 100 * mib);
    EXPECT_EQ(given.verdict, oom_verdict::fragmentation);
    EXPECT_EQ(*given.secondary, oom_verdict::memory_cap);
}

TEST(oom, more_reserved_earlier_than_at_the_oom_raises_the_inferred_cap) {
    // 104 MiB reserved and given back before: the cap is at least that, still below 112 MiB.
    const device_model model = device_model::build(holes_under_a_cap(104 * mib), 0);
    const oom_report report = analyze_oom(model, oom_entries(model)[0]);
    EXPECT_EQ(report.cap.lower, 104 * mib);
    EXPECT_EQ(report.cap.upper, 112 * mib);
}

TEST(oom, a_graph_pool_holding_a_free_segment_is_named_with_its_owner) {
    // A capture stream (9) holds a free 64 MiB segment and a live 32 MiB one; the snapshot's
    // final segments name only the live one's pool, (1, 0). A 64 MiB request on stream 0 fails
    // under a cap: releasing the graph's pool would have made room.
    auto snap = std::make_shared<snapshot::snapshot>();
    const auto stacks = testing::make_stacks(*snap, 1);
    testing::reference_allocator allocator(*snap);
    const uint64_t live = allocator.allocate(32 * mib, 9, stacks[0]);
    const uint64_t cached = allocator.allocate(64 * mib, 9, stacks[0]);
    allocator.free(cached, false);
    allocator.allocate(64 * mib, 0, stacks[0]);
    snapshot::trace_entry oom;
    oom.kind = snapshot::action::oom;
    oom.address = 70ull << 30;
    oom.size = 64 * mib;
    snap->trace_for(0).entries.push_back(oom);
    snapshot::trace_entry released;  // deleting the graph gave the cached segment back
    released.kind = snapshot::action::segment_free;
    released.address = cached;
    released.size = 64 * mib;
    released.stream = 9;
    snap->trace_for(0).entries.push_back(released);
    allocator.finish();
    for (auto& seg : snap->segments) {
        if (seg.address == live) {
            seg.pool_id_first = 1;
        }
    }
    std::erase_if(snap->segments,
                  [&](const snapshot::segment& seg) { return seg.address == cached; });
    const device_model model = device_model::build(snap, 0);
    const oom_report report = analyze_oom(model, oom_entries(model)[0]);
    EXPECT_EQ(report.verdict, oom_verdict::private_pools);
    EXPECT_EQ(*report.secondary, oom_verdict::memory_cap);
    ASSERT_EQ(report.private_pools.size(), 1u);
    const oom_private_pool& pool = report.private_pools[0];
    ASSERT_TRUE(pool.pool);
    EXPECT_EQ(*pool.pool, (segment_pool{1, 0}));
    EXPECT_TRUE(pool.inferred);
    EXPECT_EQ(pool.releasable, 64 * mib);
    EXPECT_EQ(pool.segments, 2u);
    EXPECT_NE(report.explanation.find("a CUDA graph's own pool (capture 1)"), std::string::npos);
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

// A rank's overview (peaks and when, the end, counts of allocations, device allocations and
// OOMs) on a trace whose every number is known, and their totals.

#include <gtest/gtest.h>

#include <memory>

#include "memtrail/analysis/rank_overview.hpp"
#include "reference_allocator.hpp"

namespace memtrail::analysis {
namespace {

constexpr uint64_t mib = 1ull << 20;

// A 30 MiB segment, used whole once, then cut into three 10 MiB blocks of which the middle one
// stays; then a 20 MiB request fails. Device 1 holds an idle segment and no trace.
std::shared_ptr<snapshot::snapshot> make_rank() {
    auto snap = std::make_shared<snapshot::snapshot>();
    const auto stacks = testing::make_stacks(*snap, 3);
    testing::reference_allocator allocator(*snap);
    allocator.free(allocator.allocate(30 * mib, 7, stacks[0]), false);  // entries 0, 1, 2, 3
    const uint64_t a = allocator.allocate(10 * mib, 7, stacks[0]);
    allocator.allocate(10 * mib, 7, stacks[1]);
    const uint64_t b = allocator.allocate(10 * mib, 7, stacks[2]);
    allocator.free(a, false);
    allocator.free(b, false);
    snapshot::trace_entry oom;
    oom.kind = snapshot::action::oom;
    oom.size = 20 * mib;
    oom.stream = 7;
    oom.time_ns = snap->trace_for(0).entries.back().time_ns + 1000;
    snap->trace_for(0).entries.push_back(oom);
    allocator.finish();
    snapshot::segment idle;
    idle.device = 1;
    idle.address = 0x100000000ull;
    idle.total_size = 2 * mib;
    idle.is_large = false;
    idle.blocks.push_back(
        snapshot::block{idle.address, 2 * mib, 0, snapshot::block_state::inactive});
    snap->segments.push_back(idle);
    return snap;
}

TEST(rank_overview, peaks_end_and_counts_of_a_known_trace) {
    const auto snap = make_rank();
    const device_model model = device_model::build(snap, 0);
    const rank_overview o = overview_of(model);
    EXPECT_EQ(o.device, 0);
    EXPECT_EQ(o.devices, (std::vector<int>{0, 1}));
    EXPECT_EQ(o.entries, snap->trace_for(0).entries.size());
    EXPECT_EQ(o.first_time_ns, snap->trace_for(0).entries.front().time_ns);
    // Entry 0 allocates the segment (position 1), entry 1 the whole block (position 2).
    EXPECT_EQ(o.peak_reserved.bytes, 30 * mib);
    EXPECT_EQ(o.peak_reserved.position, 1u);
    EXPECT_EQ(o.peak_allocated.bytes, 30 * mib);
    EXPECT_EQ(o.peak_allocated.position, 2u);
    EXPECT_EQ(o.peak_allocated.time_ns, snap->trace_for(0).entries[1].time_ns);
    EXPECT_EQ(o.end_allocated, 10 * mib);
    EXPECT_EQ(o.end_reserved, 30 * mib);
    EXPECT_EQ(o.allocations, 4);
    EXPECT_EQ(o.device_allocations, 1);
    EXPECT_EQ(o.ooms, 1);
}

TEST(rank_overview, a_device_without_a_trace_has_its_segments_only) {
    const auto snap = make_rank();
    const rank_overview o = overview_of(device_model::build(snap, 1));
    EXPECT_EQ(o.device, 1);
    EXPECT_EQ(o.entries, 0u);
    EXPECT_EQ(o.peak_reserved.bytes, 2 * mib);
    EXPECT_EQ(o.peak_reserved.position, 0u);
    EXPECT_EQ(o.end_reserved, 2 * mib);
    EXPECT_EQ(o.end_allocated, 0u);
    EXPECT_EQ(o.allocations, 0);
    EXPECT_EQ(o.ooms, 0);
}

TEST(rank_overview, devices_text_names_the_others_only_when_there_are_any) {
    rank_overview o;
    o.device = 1;
    o.devices = {1};
    EXPECT_EQ(devices_text(o), "1");
    o.devices = {0, 1, 3};
    EXPECT_EQ(devices_text(o), "1 of 0,1,3");
}

TEST(rank_totals, add_each_ranks_peaks_end_and_counts) {
    const auto snap = make_rank();
    const rank_overview busy = overview_of(device_model::build(snap, 0));
    const rank_overview idle = overview_of(device_model::build(snap, 1));
    rank_totals t;
    add_to(t, busy);
    add_to(t, idle);
    EXPECT_EQ(t.peak_allocated, 30 * mib);
    EXPECT_EQ(t.peak_reserved, 32 * mib);
    EXPECT_EQ(t.end_allocated, 10 * mib);
    EXPECT_EQ(t.end_reserved, 32 * mib);
    EXPECT_EQ(t.allocations, 4);
    EXPECT_EQ(t.device_allocations, 1);
    EXPECT_EQ(t.ooms, 1);
}

}  // namespace
}  // namespace memtrail::analysis

// A rank's overview (peaks and when, the end, counts of allocations, device allocations and
// OOMs) on a trace whose every number is known, their totals, and the ranks that paths name.

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

TEST(rank_in_path, finds_the_last_rank_number_not_inside_a_word) {
    EXPECT_EQ(rank_in_path("rank0.memtrail"), 0);
    EXPECT_EQ(rank_in_path("/runs/job7/trace_rank_12.pickle"), 12);
    EXPECT_EQ(rank_in_path("RANK-3.pickle"), 3);
    EXPECT_EQ(rank_in_path("run/rank1/snapshot.pickle"), 1);
    EXPECT_EQ(rank_in_path("rank1/rank5.memtrail"), 5) << "the file's own name is the last";
    EXPECT_EQ(rank_in_path("local_rank2.memtrail"), 2);
    EXPECT_EQ(rank_in_path("/home/frank2/snapshot.pickle"), std::nullopt);
    EXPECT_EQ(rank_in_path("ranks/snapshot.pickle"), std::nullopt);
    EXPECT_EQ(rank_in_path("rank.memtrail"), std::nullopt);
    EXPECT_EQ(rank_in_path("rank99999999999999.memtrail"), std::nullopt) << "too large";
    EXPECT_EQ(rank_in_path(""), std::nullopt);
}

TEST(ranks_of_paths, names_when_all_name_distinct_ranks_else_positions) {
    EXPECT_EQ(ranks_of_paths({"rank1.memtrail", "rank0.memtrail"}), (std::vector<int>{1, 0}));
    EXPECT_EQ(ranks_of_paths({"a/rank3.pickle"}), (std::vector<int>{3}));
    EXPECT_EQ(ranks_of_paths({"rank1.memtrail", "other.memtrail"}), (std::vector<int>{0, 1}));
    EXPECT_EQ(ranks_of_paths({"rank1.memtrail", "x/rank1.memtrail"}), (std::vector<int>{0, 1}));
    EXPECT_TRUE(ranks_of_paths({}).empty());
}

}  // namespace
}  // namespace memtrail::analysis

namespace memtrail::analysis {
namespace {

// One rank of a two-GPU job: rank `rank` on host node-`rank`, its trace from `start_ns`.
snapshot::snapshot job_rank(int rank, int64_t start_ns) {
    snapshot::snapshot s;
    s.info.producer = "memtrail 0.1.0";
    s.info.host = "node-" + std::to_string(rank);
    s.info.pid = 1000 + rank;
    s.info.devices = {{0, "NVIDIA H200", 150ull << 30, 9, 0, 132},
                      {1, "NVIDIA H200", 150ull << 30, 9, 0, 132}};
    s.settings.conf = "expandable_segments:True";
    s.settings.expandable_segments = true;
    auto& trace = s.trace_for(rank % 2);
    for (int64_t i = 0; i < 3; ++i) {
        snapshot::trace_entry e;
        e.kind = snapshot::action::alloc;
        e.time_ns = start_ns + i * 1'000'000'000;
        trace.entries.push_back(e);
    }
    s.info.time_ns = start_ns + 10'000'000'000;
    return s;
}

constexpr int64_t noon = 1'795'000'000'000'000'000;

TEST(why_not_one_job, ranks_of_one_job_differ_only_in_rank_host_pid_and_a_little_time) {
    const snapshot::snapshot rank0 = job_rank(0, noon);
    EXPECT_EQ(why_not_one_job(rank0, job_rank(1, noon + 5'000'000'000)), std::nullopt);
    snapshot::snapshot renumbered = job_rank(1, noon);
    renumbered.info.devices[0].device = 3;  // each rank numbers what it sees
    EXPECT_EQ(why_not_one_job(rank0, renumbered), std::nullopt);
    snapshot::snapshot no_times = job_rank(1, 0);
    no_times.info.time_ns = 0;
    for (auto& e : no_times.trace_for(1).entries) {
        e.time_ns = 0;
    }
    EXPECT_EQ(why_not_one_job(rank0, no_times), std::nullopt) << "no times: nothing to compare";
}

TEST(why_not_one_job, names_what_tells_two_jobs_apart) {
    const snapshot::snapshot rank0 = job_rank(0, noon);
    const auto reason = [&](snapshot::snapshot other) {
        return why_not_one_job(rank0, other).value_or("one job");
    };
    snapshot::snapshot other = job_rank(1, noon);
    other.info.producer = "torch pickle import";
    EXPECT_NE(reason(other).find("written by"), std::string::npos) << reason(other);
    other = job_rank(1, noon);
    other.info.devices.pop_back();
    EXPECT_NE(reason(other).find("other devices (2 against 1"), std::string::npos);
    other = job_rank(1, noon);
    other.info.devices[1].name = "NVIDIA H100";
    EXPECT_NE(reason(other).find("other devices"), std::string::npos);
    other = job_rank(1, noon);
    other.settings.conf = "";
    EXPECT_NE(reason(other).find("allocator settings"), std::string::npos);
    other = job_rank(1, noon);
    other.info.host = rank0.info.host;
    other.info.pid = rank0.info.pid;
    EXPECT_NE(reason(other).find("the same process"), std::string::npos);
    other = job_rank(1, noon + job_time_gap_ns + 20'000'000'000);
    EXPECT_NE(reason(other).find("minutes apart"), std::string::npos) << reason(other);
    EXPECT_EQ(reason(job_rank(1, noon + job_time_gap_ns)), "one job") << "within the gap";
}

}  // namespace
}  // namespace memtrail::analysis

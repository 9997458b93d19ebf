// Recovering requests from a trace: which entries drive the replay.

#include <gtest/gtest.h>

#include <chrono>

#include "detail/trace_plan.hpp"
#include "memtrail/replay/replay.hpp"

namespace memtrail::replay::detail {
namespace {

using snapshot::action;

snapshot::trace_entry entry(action a, uint64_t address, uint64_t size = 512) {
    snapshot::trace_entry e;
    e.kind = a;
    e.address = address;
    e.size = size;
    return e;
}

TEST(TracePlan, ClassifiesRequestsAndConsequences) {
    const std::vector<snapshot::trace_entry> trace = {
        entry(action::segment_alloc, 0x1000, 2 << 20),  // 0 consequence of 1
        entry(action::alloc, 0x1000),                   // 1
        entry(action::alloc, 0x1200),                   // 2
        entry(action::free_requested, 0x1000),          // 3 completes at once
        entry(action::free_completed, 0x1000),          // 4 consequence
        entry(action::free_requested, 0x1200),          // 5 deferred (record_stream)
        entry(action::free_completed, 0x1200),          // 6 the deferred completion
        entry(action::alloc, 0x1000),                   // 7
        entry(action::segment_free, 0x9000, 4 << 20),   // 8 before the oom: decided at replay
        entry(action::oom, 0, 1 << 30),                 // 9
        entry(action::free_requested, 0x1000),          // 10
        entry(action::free_completed, 0x1000),          // 11
        entry(action::segment_free, 0x1000, 2 << 20),   // 12 empty_cache
        entry(action::segment_free, 0x5000, 2 << 20),   // 13 same release
    };
    const std::vector<snapshot::trace_entry> with_gap = [&] {
        auto t = trace;
        std::swap(t[6], t[5]);  // free_completed no longer follows its request
        return t;
    }();
    const trace_plan plan = plan_trace(with_gap, 80ull << 30);
    const std::vector<step_kind> expected = {
        step_kind::consequence,   step_kind::allocate,    step_kind::allocate,
        step_kind::free,          step_kind::consequence, step_kind::complete_free,
        step_kind::free_deferred, step_kind::allocate,    step_kind::release_run,
        step_kind::allocate_oom,  step_kind::free,        step_kind::consequence,
        step_kind::empty_cache,   step_kind::consequence};
    EXPECT_EQ(plan.steps, expected);
    EXPECT_EQ(plan.next_request[8], 9u);
    EXPECT_EQ(plan.device_addresses, (std::vector<device_address>{0x1000}));
}

TEST(TracePlan, ARunGivingBackASmallSegmentBeforeALargeOneEmptiesAPrivatePool) {
    // The default pools give back large segments before small ones; a private pool its small
    // ones before its large ones, after the default pools'.
    constexpr uint64_t small = 2 << 20, large = 20 << 20;
    const std::vector<snapshot::trace_entry> made = {
        entry(action::segment_alloc, 0x1000000, large),  // 0
        entry(action::alloc, 0x1000000, 4 << 20),        // 1
        entry(action::segment_alloc, 0x2000000, small),  // 2
        entry(action::alloc, 0x2000000),                 // 3
        entry(action::segment_alloc, 0x3000000, large),  // 4
        entry(action::alloc, 0x3000000, 4 << 20),        // 5
        entry(action::free_requested, 0x1000000),        // 6
        entry(action::free_completed, 0x1000000),        // 7
        entry(action::free_requested, 0x2000000),        // 8
        entry(action::free_completed, 0x2000000),        // 9
        entry(action::free_requested, 0x3000000),        // 10
        entry(action::free_completed, 0x3000000),        // 11
    };
    // The run an empty_cache gives back, from entry 12, with the segments in this order.
    auto part_start = [&](std::vector<std::pair<uint64_t, uint64_t>> order) {
        auto trace = made;
        for (const auto& [address, size] : order) {
            trace.push_back(entry(action::segment_free, address, size));
        }
        const trace_plan plan = plan_trace(trace, 80ull << 30);
        EXPECT_EQ(plan.steps[12], step_kind::empty_cache);
        return plan.private_part_start[12];
    };
    const std::pair<uint64_t, uint64_t> first{0x1000000, large}, second{0x3000000, large},
        small_one{0x2000000, small};
    EXPECT_EQ(part_start({first, second, small_one}), trace_plan::none);  // the default pools'
    EXPECT_EQ(part_start({small_one, first, second}), 0u);  // a MemPool emptying itself
    EXPECT_EQ(part_start({first, small_one, second}), 1u);  // the default pools', then a pool's
}

TEST(TracePlan, ASegmentAnOomLeftCachedWasInAHeldPrivatePool) {
    // An OOM returns every cached segment it may; one left wholly free was a held pool's.
    const std::vector<snapshot::trace_entry> trace = {
        entry(action::segment_alloc, 0x1000, 2 << 20),  // 0 freed before the OOM: cached
        entry(action::alloc, 0x1000),                   // 1
        entry(action::free_requested, 0x1000),          // 2
        entry(action::free_completed, 0x1000),          // 3
        entry(action::segment_alloc, 0x9000, 2 << 20),  // 4 still in use at the OOM
        entry(action::alloc, 0x9000),                   // 5
        entry(action::oom, 0, 1 << 30),                 // 6
    };
    const trace_plan plan = plan_trace(trace, 80ull << 30);
    EXPECT_EQ(plan.held_private[0], 1);
    EXPECT_EQ(plan.held_private[4], 0);
}

TEST(TracePlan, NewExpandableSegmentsAreRecognisedByTheirFirstMap) {
    const uint64_t total = 80ull << 30;
    const std::vector<snapshot::trace_entry> trace = {
        entry(action::segment_map, 0x7000000000, 20 << 20),
        entry(action::alloc, 0x7000000000, 30 << 20),
        entry(action::segment_map, 0x7000000000 + (20 << 20), 20 << 20),  // grows the same one
        entry(action::alloc, 0x7000000000 + (30 << 20), 5 << 20),
        entry(action::segment_map, 0x9000000000, 2 << 20),  // a small-pool segment
        entry(action::alloc, 0x9000000000, 1000),
    };
    const trace_plan plan = plan_trace(trace, total);
    EXPECT_EQ(plan.device_addresses, (std::vector<device_address>{0x7000000000, 0x9000000000}));
}

// Runs of releases were planned by looking ahead from each of their entries: 100k segment_free
// entries took 14 s to replay, 1M would take about 25 minutes. The plan now costs a step per
// entry; a run of 300k completions and 300k frees before a new segment plans and replays in
// under a second (the quadratic planner needed minutes).
TEST(TracePlan, LongRunsOfFreesPlanAndReplayInLinearTime) {
    constexpr size_t run = 300000;
    std::vector<snapshot::trace_entry> trace;
    for (size_t i = 0; i < run; ++i) {
        trace.push_back(entry(action::free_completed, 0x100000000 + i * 512));
    }
    for (size_t i = 0; i < run; ++i) {
        trace.push_back(entry(action::segment_free, 0x7000000000 + (i << 21), 2 << 20));
    }
    trace.push_back(entry(action::segment_alloc, 0x9000000000, 2 << 20));
    trace.push_back(entry(action::alloc, 0x9000000000, 4096));

    const auto start = std::chrono::steady_clock::now();
    const trace_plan plan = plan_trace(trace, 80ull << 30);
    snapshot::snapshot input;
    input.trace_for(0).entries = trace;
    replay_options options;
    options.device_memory = 80ull << 30;
    const replay_result result = replay_trace(input, options);
    const auto elapsed = std::chrono::steady_clock::now() - start;
    // A guard against the quadratic planner, which needs minutes here, not a speed target (that
    // is bench_replay's million_frees): 0.4 s in a plain build, 3.2 s under TSan on 2 cores.
    EXPECT_LT(elapsed, std::chrono::seconds(60));

    EXPECT_EQ(plan.steps[0], step_kind::complete_before_release);
    EXPECT_TRUE(plan.releases_follow[0]);
    EXPECT_EQ(plan.steps[run - 1], step_kind::complete_before_release);
    EXPECT_EQ(plan.steps[run], step_kind::release_run);
    EXPECT_EQ(plan.next_request[run], 2 * run + 1);
    EXPECT_EQ(plan.steps[2 * run - 1], step_kind::consequence);
    EXPECT_EQ(plan.steps[2 * run + 1], step_kind::allocate);
    EXPECT_EQ(result.allocations, 1u);
}

}  // namespace
}  // namespace memtrail::replay::detail

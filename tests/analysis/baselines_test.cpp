// The what-if baselines on small traces whose outcome can be worked out by hand.

#include <gtest/gtest.h>

#include <memory>

#include "memtrail/analysis/baselines.hpp"

namespace memtrail::analysis {
namespace {

constexpr uint64_t kib = 1024;

// Allocations and frees by address only: the baselines read the requests, not the segments.
std::shared_ptr<snapshot::snapshot> trace_of(
    const std::vector<std::pair<snapshot::action, std::pair<uint64_t, uint64_t>>>& steps) {
    auto snap = std::make_shared<snapshot::snapshot>();
    auto& entries = snap->trace_for(0).entries;
    for (const auto& [kind, what] : steps) {
        snapshot::trace_entry e;
        e.kind = kind;
        e.address = what.first;
        e.size = what.second;
        entries.push_back(e);
    }
    return snap;
}

using snapshot::action;

TEST(baselines, cuda_malloc_holds_exactly_the_live_requests) {
    const auto snap = trace_of({{action::alloc, {1, 1000}},
                                {action::alloc, {2, 3000}},
                                {action::free_requested, {1, 1000}},
                                {action::free_completed, {1, 1000}},
                                {action::alloc, {3, 100}}});
    const policy_outcome outcome = simulate_cuda_malloc(device_model::build(snap, 0), 0);
    EXPECT_EQ(outcome.peak_reserved, 1024u + 3072u);
    EXPECT_EQ(outcome.device_allocations, 3u);
    EXPECT_EQ(outcome.failed_allocations, 0u);
    const policy_outcome tight = simulate_cuda_malloc(device_model::build(snap, 0), 4000);
    EXPECT_EQ(tight.failed_allocations, 1u);
    EXPECT_EQ(tight.first_failure, 1u);
}

TEST(baselines, buddy_splits_and_coalesces) {
    const auto snap = trace_of({{action::alloc, {1, 256 * kib}},
                                {action::alloc, {2, 256 * kib}},
                                {action::alloc, {3, 200 * kib}},
                                {action::alloc, {4, 256 * kib}},
                                {action::free_completed, {1, 0}},
                                {action::free_completed, {2, 0}},
                                {action::free_completed, {3, 0}},
                                {action::free_completed, {4, 0}},
                                {action::alloc, {5, 1024 * kib}}});
    const policy_outcome outcome = simulate_buddy(device_model::build(snap, 0), 0, 1024 * kib);
    EXPECT_EQ(outcome.device_allocations, 1u);  // the freed quarters merge back into one arena
    EXPECT_EQ(outcome.peak_reserved, 1024 * kib);
    EXPECT_EQ(outcome.peak_allocated, 1024 * kib);  // 200 KiB rounds up to 256 KiB
    const policy_outcome tight = simulate_buddy(device_model::build(snap, 0), 512 * kib, 256 * kib);
    EXPECT_EQ(tight.failed_allocations, 3u);
}

TEST(baselines, buddy_fragmentation_is_measured_at_peak_allocated) {
    const auto snap = trace_of({{action::alloc, {1, 512 * kib}}, {action::alloc, {2, 128 * kib}}});
    const policy_outcome outcome = simulate_buddy(device_model::build(snap, 0), 0, 1024 * kib);
    // One arena: 512 KiB used, then 128 KiB carved from the other half: free 256 + 128 KiB.
    EXPECT_EQ(outcome.peak_reserved, 1024 * kib);
    EXPECT_DOUBLE_EQ(outcome.fragmentation, 1.0 - 256.0 / 384.0);
}

}  // namespace
}  // namespace memtrail::analysis

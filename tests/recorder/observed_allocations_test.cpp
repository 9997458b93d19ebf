// Allocations the program makes itself (memtrail run --mode observe): recorded as segments of one
// block, in the trace and in the snapshot's state, with the caller's stack; the allocator itself
// is untouched.

#include <gtest/gtest.h>

#include <algorithm>
#include <stdexcept>
#include <string>
#include <vector>

#include "memtrail/core/simulated_device.hpp"
#include "memtrail/recorder/recorder.hpp"

namespace {

using namespace memtrail;
using snapshot::action;

class observed_allocations_test : public ::testing::Test {
  protected:
    observed_allocations_test() {
        recorder::history_options options;
        options.enabled = recorder::record_mode::all;
        options.context = recorder::context_mode::all;
        history.record_memory_history(options);
    }

    simulated_device gpu;
    caching_allocator allocator{{&gpu}};
    recorder::recorder history{allocator};
};

// The trace's entries, less the "snapshot" one that taking the snapshot adds.
std::vector<snapshot::trace_entry> entries(const snapshot::snapshot& s) {
    std::vector<snapshot::trace_entry> result;
    for (const auto& entry : s.find_trace(0)->entries) {
        if (entry.kind != action::snapshot) {
            result.push_back(entry);
        }
    }
    return result;
}

std::vector<action> kinds(const snapshot::snapshot& s) {
    std::vector<action> result;
    for (const auto& entry : entries(s)) {
        result.push_back(entry.kind);
    }
    return result;
}

[[gnu::noinline]] void observe_from_a_named_function(recorder::recorder& history,
                                                     device_address address, uint64_t size) {
    history.observe_allocation(address, size, 0, 7);
    asm volatile("");
}

TEST_F(observed_allocations_test, each_is_a_segment_holding_one_block_of_the_size_asked) {
    observe_from_a_named_function(history, 0x1000, 3000);
    history.observe_allocation(0x9000, 512, 0);

    const snapshot::snapshot s = history.take_snapshot();
    ASSERT_EQ(s.segments.size(), 2u);
    const snapshot::segment& first = s.segments[0];
    EXPECT_EQ(first.address, 0x1000u);
    EXPECT_EQ(first.total_size, 3000u);
    EXPECT_EQ(first.allocated_size, 3000u);
    EXPECT_EQ(first.stream, 7u);
    ASSERT_EQ(first.blocks.size(), 1u);
    EXPECT_EQ(first.blocks[0].size, 3000u);
    EXPECT_EQ(first.blocks[0].state, snapshot::block_state::active_allocated);
    ASSERT_NE(first.blocks[0].stack, snapshot::no_id);
    std::vector<std::string> functions;
    for (const snapshot::frame_id f : s.stack_at(first.blocks[0].stack)) {
        functions.emplace_back(s.string_at(s.frame_at(f).function));
    }
    EXPECT_TRUE(std::any_of(functions.begin(), functions.end(),
                            [](const std::string& name) {
                                return name.find("observe_from_a_named_function") !=
                                       std::string::npos;
                            }))
        << "innermost: " << (functions.empty() ? "none" : functions.front());

    EXPECT_EQ(kinds(s), (std::vector<action>{action::segment_alloc, action::alloc,
                                             action::segment_alloc, action::alloc}));
    // The allocator served nothing.
    EXPECT_EQ(allocator.on(0).stats().reserved_bytes[0].current, 0);
    EXPECT_EQ(gpu.calls().allocate, 0u);
}

TEST_F(observed_allocations_test, a_free_is_recorded_as_the_allocator_frees_a_whole_segment) {
    history.observe_allocation(0x1000, 4096, 0);
    EXPECT_TRUE(history.observe_free(0x1000, 0));

    const snapshot::snapshot s = history.take_snapshot();
    EXPECT_TRUE(s.segments.empty());
    EXPECT_EQ(kinds(s),
              (std::vector<action>{action::segment_alloc, action::alloc, action::free_requested,
                                   action::free_completed, action::segment_free}));
    for (const auto& entry : entries(s)) {
        EXPECT_EQ(entry.address, 0x1000u);
        EXPECT_EQ(entry.size, 4096u);
    }
}

TEST_F(observed_allocations_test, an_address_never_observed_is_refused_and_records_nothing) {
    history.observe_allocation(0x1000, 4096, 0);
    EXPECT_FALSE(history.observe_free(0x2000, 0));
    EXPECT_FALSE(history.observe_free(0x1000 + 16, 0));

    const snapshot::snapshot s = history.take_snapshot();
    EXPECT_EQ(s.segments.size(), 1u);
    EXPECT_EQ(kinds(s), (std::vector<action>{action::segment_alloc, action::alloc}));
}

// NULL, a size past the address space and the same pointer twice were accepted (issue 31): each
// is refused and records nothing.
TEST_F(observed_allocations_test, null_size_max_and_overlaps_are_refused_and_record_nothing) {
    history.observe_allocation(0x10000, 4096, 0);
    const auto refused = [&](device_address address, uint64_t size, const std::string& words) {
        try {
            history.observe_allocation(address, size, 0);
            return std::string("accepted");
        } catch (const std::invalid_argument& e) {
            const std::string message = e.what();
            return message.find(words) != std::string::npos ? std::string("refused") : message;
        }
    };
    EXPECT_EQ(refused(0, 4096, "at NULL"), "refused");
    EXPECT_EQ(refused(0x20000, UINT64_MAX, "past the 64-bit address space"), "refused");
    EXPECT_EQ(refused(0x10000, 4096, "overlaps the one at 0x10000"), "refused");
    EXPECT_EQ(refused(0x10000 + 2048, 16, "overlaps the one at 0x10000"), "refused");
    EXPECT_EQ(refused(0x10000 - 16, 32, "overlaps the one at 0x10000"), "refused");
    history.observe_allocation(0x10000 + 4096, 16, 0);  // right after it: no overlap

    const snapshot::snapshot s = history.take_snapshot();
    EXPECT_EQ(s.segments.size(), 2u);
    EXPECT_EQ(kinds(s), (std::vector<action>{action::segment_alloc, action::alloc,
                                             action::segment_alloc, action::alloc}));
}

TEST_F(observed_allocations_test, a_device_that_does_not_exist_is_refused) {
    EXPECT_THROW(history.observe_allocation(0x1000, 4096, 1), std::invalid_argument);
    EXPECT_THROW(history.observe_free(0x1000, -1), std::invalid_argument);
    EXPECT_TRUE(history.take_snapshot().segments.empty());
}

}  // namespace

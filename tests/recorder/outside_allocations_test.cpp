// Memory outside the caching allocator (memtrail run on a PyTorch process): recorded apart from
// the allocator's trace, with the library named and the caller's stack; the accounting rows add
// up to the device's used memory; the snapshot carries both.

#include <gtest/gtest.h>

#include <stdexcept>
#include <string>

#include "memtrail/core/simulated_device.hpp"
#include "memtrail/recorder/recorder.hpp"

namespace {

using namespace memtrail;
using snapshot::outside_kind;

class outside_allocations_test : public ::testing::Test {
  protected:
    outside_allocations_test() {
        recorder::history_options options;
        options.enabled = recorder::record_mode::all;
        options.context = recorder::context_mode::all;
        history.record_memory_history(options);
    }

    simulated_device gpu;
    caching_allocator allocator{{&gpu}};
    recorder::recorder history{allocator};
};

[[gnu::noinline]] void workspace_from_a_named_function(recorder::recorder& history) {
    history.record_outside_allocation({.kind = outside_kind::device,
                                       .address = 0x7000000,
                                       .size = 64 << 20,
                                       .device = 0,
                                       .stream = 0,
                                       .call = "cuMemAlloc",
                                       .caller_module = "/usr/lib/libcublasLt.so.12"});
    asm volatile("");
}

std::string function_names(const snapshot::snapshot& s, snapshot::stack_id stack) {
    std::string names;
    for (const snapshot::frame_id f : s.stack_at(stack)) {
        names += std::string(s.string_at(s.frame_at(f).function)) + "\n";
    }
    return names;
}

TEST_F(outside_allocations_test, kept_apart_from_the_allocators_trace_and_statistics) {
    const device_address tensor = history.allocate(1 << 20, 0);
    workspace_from_a_named_function(history);
    history.record_outside_allocation({.kind = outside_kind::pinned_host,
                                       .address = 0x9000,
                                       .size = 4096,
                                       .call = "cudaHostAlloc",
                                       .caller_module = "/opt/app/libfoo.so"});
    const snapshot::snapshot s = history.take_snapshot();
    for (const auto& entry : s.find_trace(0)->entries) {
        EXPECT_NE(entry.size, uint64_t{64} << 20) << "the workspace reached the trace";
    }
    EXPECT_EQ(s.stats.at(0).at("allocated_bytes.all.peak"), 1 << 20);
    EXPECT_EQ(s.segments.size(), 1u);
    ASSERT_EQ(s.outside.live.size(), 2u);
    ASSERT_EQ(s.outside.events.size(), 2u);
    const snapshot::outside_event& workspace = s.outside.live[1];  // by (kind, address)
    EXPECT_EQ(workspace.kind, outside_kind::pinned_host);
    const snapshot::outside_event& device = s.outside.live[0];
    EXPECT_EQ(s.string_at(device.library), "cuBLAS");
    EXPECT_EQ(s.string_at(device.call), "cuMemAlloc");
    EXPECT_EQ(device.size, uint64_t{64} << 20);
    EXPECT_GT(device.time_ns, 0);
    EXPECT_NE(function_names(s, device.stack).find("workspace_from_a_named_function"),
              std::string::npos)
        << function_names(s, device.stack);
    EXPECT_EQ(s.string_at(workspace.library), "libfoo.so");
    history.free(tensor);
}

TEST_F(outside_allocations_test, frees_are_recorded_and_end_the_live_allocation) {
    workspace_from_a_named_function(history);
    const auto freed = history.record_outside_free(outside_kind::device, 0x7000000, 0);
    ASSERT_TRUE(freed.has_value());
    EXPECT_EQ(freed->second, uint64_t{64} << 20);
    EXPECT_FALSE(history.record_outside_free(outside_kind::device, 0x7000000, 0).has_value());
    EXPECT_FALSE(history.record_outside_free(outside_kind::pinned_host, 0x1234, 0).has_value());
    const snapshot::snapshot s = history.take_snapshot();
    EXPECT_TRUE(s.outside.live.empty());
    ASSERT_EQ(s.outside.events.size(), 2u);
    EXPECT_TRUE(s.outside.events[1].is_free);
    EXPECT_EQ(s.outside.events[1].size, uint64_t{64} << 20);
}

TEST_F(outside_allocations_test, the_same_address_twice_and_bad_devices_are_refused) {
    workspace_from_a_named_function(history);
    EXPECT_THROW(workspace_from_a_named_function(history), std::invalid_argument);
    EXPECT_THROW(
        history.record_outside_allocation({.device = 3, .call = "cuMemAlloc", .caller_module = ""}),
        std::invalid_argument);
}

TEST_F(outside_allocations_test, accounting_adds_up_to_the_devices_used_memory) {
    const device_address tensor = history.allocate(1 << 20, 0);  // in a 2 MiB small segment
    workspace_from_a_named_function(history);
    const uint64_t reserved = 2 << 20;
    // NVML said this process holds 600 MiB of the 1 GiB in use: the rest is other processes'.
    history.record_accounting(
        "oom", 0,
        {.total = 80ull << 30, .used = 1ull << 30, .this_process = 600ull << 20, .unsplit = ""});
    // Without NVML the context holds the whole remainder, and says why.
    history.record_accounting("snapshot", 0,
                              {.total = 80ull << 30,
                               .used = 1ull << 30,
                               .this_process = std::nullopt,
                               .unsplit = "NVML is not available"});
    const snapshot::snapshot s = history.take_snapshot();
    ASSERT_EQ(s.outside.accounting.size(), 2u);
    const snapshot::memory_accounting& split = s.outside.accounting[0];
    EXPECT_EQ(split.moment, "oom");
    EXPECT_EQ(split.allocator_reserved, reserved);
    ASSERT_EQ(split.outside_by_library.size(), 1u);
    EXPECT_EQ(split.outside_by_library[0], snapshot::library_bytes("cuBLAS", 64ull << 20));
    EXPECT_EQ(split.context, (600ull << 20) - reserved - (64ull << 20));
    EXPECT_EQ(split.other_processes, (1ull << 30) - (600ull << 20));
    EXPECT_EQ(split.allocator_reserved + split.outside() + split.context + split.other_processes,
              split.device_used);
    const snapshot::memory_accounting& unsplit = s.outside.accounting[1];
    EXPECT_EQ(unsplit.other_processes, 0u);
    EXPECT_EQ(unsplit.context, (1ull << 30) - reserved - (64ull << 20));
    EXPECT_EQ(unsplit.unsplit, "NVML is not available");
    history.free(tensor);
}

TEST_F(outside_allocations_test, a_usage_source_adds_a_row_at_each_snapshot) {
    history.set_usage_source([](int) -> std::optional<recorder::device_usage> {
        return recorder::device_usage{
            .total = 1ull << 30, .used = 5 << 20, .this_process = 5 << 20, .unsplit = ""};
    });
    const snapshot::snapshot s = history.take_snapshot();
    ASSERT_EQ(s.outside.accounting.size(), 1u);
    EXPECT_EQ(s.outside.accounting[0].moment, "snapshot");
    EXPECT_EQ(s.outside.accounting[0].context, uint64_t{5} << 20);
}

}  // namespace

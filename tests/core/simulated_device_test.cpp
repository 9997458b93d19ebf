#include <gtest/gtest.h>

#include "memtrail/core/simulated_device.hpp"

namespace memtrail {
namespace {

TEST(SimulatedDevice, HandsOutDeterministicOrQueuedAddresses) {
    simulated_device dev;
    device_address a = 0, b = 0, c = 0;
    ASSERT_EQ(dev.allocate(1000, a), device_status::ok);
    ASSERT_EQ(dev.allocate(3 << 20, b), device_status::ok);
    EXPECT_EQ(a, 0x7f0000000000ull);
    EXPECT_EQ(b, a + (2 << 20));  // aligned to the 2 MiB granularity
    dev.queue_addresses({0x1000000, 0x2000000});
    ASSERT_EQ(dev.allocate(10, c), device_status::ok);
    EXPECT_EQ(c, 0x1000000u);
    ASSERT_EQ(dev.reserve_address_range(1 << 30, c), device_status::ok);
    EXPECT_EQ(c, 0x2000000u);
    EXPECT_EQ(dev.queued_address_count(), 0u);
}

TEST(SimulatedDevice, SimulatesHugeDevicesWithoutTouchingMemory) {
    simulated_device_options o;
    o.capacity = 141ull << 30;
    simulated_device dev(o);
    device_address a = 0;
    ASSERT_EQ(dev.allocate(140ull << 30, a), device_status::ok);
    EXPECT_EQ(dev.get_memory_info().free, 1ull << 30);
    EXPECT_EQ(dev.allocate(2ull << 30, a), device_status::out_of_memory);
    EXPECT_EQ(dev.calls().failed_allocations, 1u);
}

TEST(SimulatedDevice, FaultInjection) {
    simulated_device dev;
    device_address a = 0;
    dev.fail_nth_allocation(3);
    EXPECT_EQ(dev.allocate(10, a), device_status::ok);
    EXPECT_EQ(dev.allocate(10, a), device_status::ok);
    EXPECT_EQ(dev.allocate(10, a), device_status::out_of_memory);
    EXPECT_EQ(dev.allocate(10, a), device_status::ok);
    dev.set_failure_probability(0.5, 42);
    int failures = 0;
    for (int i = 0; i < 1000; ++i) {
        failures += dev.allocate(10, a) == device_status::out_of_memory;
    }
    EXPECT_GT(failures, 400);
    EXPECT_LT(failures, 600);
    dev.clear_faults();
    EXPECT_EQ(dev.allocate(10, a), device_status::ok);
}

TEST(SimulatedDevice, EventsCompleteWhenToldTo) {
    simulated_device dev;
    dev.set_events_complete_immediately(false);
    const event_handle e1 = dev.create_event(), e2 = dev.create_event();
    dev.record_event(e1, 5);
    dev.record_event(e2, 6);
    EXPECT_FALSE(dev.query_event(e1));
    EXPECT_EQ(dev.pending_events(), (std::vector<event_handle>{e1, e2}));
    dev.complete_stream(6);
    EXPECT_TRUE(dev.query_event(e2));
    EXPECT_FALSE(dev.query_event(e1));
    dev.synchronize_event(e1);
    EXPECT_TRUE(dev.query_event(e1));
    EXPECT_EQ(dev.calls().record_event, 2u);
}

TEST(SimulatedDevice, VirtualMemoryIsChecked) {
    simulated_device dev;
    device_address base = 0;
    physical_handle h = 0;
    ASSERT_EQ(dev.reserve_address_range(64 << 20, base), device_status::ok);
    ASSERT_EQ(dev.create_physical(2 << 20, h), device_status::ok);
    dev.map(base, 2 << 20, h);
    EXPECT_THROW(dev.map(base, 2 << 20, h), device_error);
    EXPECT_EQ(dev.used_bytes(), 2u << 20);
    dev.unmap(base, 2 << 20);
    EXPECT_THROW(dev.unmap(base, 2 << 20), device_error);
    dev.release_physical(h);
    EXPECT_THROW(dev.create_physical(1000, h), device_error);  // not a multiple of the page
    dev.release_address_range(base, 64 << 20);
    EXPECT_THROW(dev.free(0x1234), device_error);
    EXPECT_EQ(dev.used_bytes(), 0u);
}

}  // namespace
}  // namespace memtrail

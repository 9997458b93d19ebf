// record_stream: a block freed while in use on other streams returns to its pool only once
// events recorded on those streams have completed, checked at the next allocation.

#include <gtest/gtest.h>

#include "event_log.hpp"
#include "memtrail/core/caching_allocator.hpp"
#include "memtrail/core/simulated_device.hpp"

namespace memtrail {
namespace {

using testing::event_log;

class CrossStream : public ::testing::Test {
  protected:
    CrossStream() {
        dev.set_events_complete_immediately(false);
        allocator.set_observer(&log);
    }
    ~CrossStream() override { allocator.set_observer(nullptr); }
    int64_t stat_of(const std::string& name) const { return allocator.memory_stats().at(name); }
    simulated_device dev;
    device_allocator allocator{dev};
    event_log log;
};

TEST_F(CrossStream, FreeIsPendingUntilTheOtherStreamsEventCompletes) {
    const stream_handle main_stream = 10, side = 20;
    const device_address x = allocator.allocate(1000, main_stream);
    allocator.record_stream(x, side);
    allocator.record_stream(x, main_stream);  // the allocation stream itself needs no event
    allocator.free(x);
    EXPECT_EQ(log.count(allocator_action::free_requested), 1u);
    EXPECT_EQ(log.count(allocator_action::free_completed), 0u);
    EXPECT_EQ(stat_of("allocated_bytes.all.current"), 0);
    EXPECT_EQ(stat_of("active_bytes.all.current"), 1024);
    EXPECT_EQ(dev.pending_events().size(), 1u);
    EXPECT_EQ(dev.event_stream(dev.pending_events()[0]), side);
    EXPECT_EQ(allocator.check_consistency(), "");

    // The block is still busy: the next allocation of the same size gets another block.
    const device_address y = allocator.allocate(1000, main_stream);
    EXPECT_NE(y, x);
    auto segments = allocator.snapshot(false);
    ASSERT_EQ(segments.size(), 1u);
    EXPECT_TRUE(segments[0].blocks[0].active);
    EXPECT_FALSE(segments[0].blocks[0].allocated);

    dev.complete_stream(side);
    EXPECT_EQ(log.count(allocator_action::free_completed), 0u);  // noticed at the next allocation
    const size_t before = log.events.size();
    const device_address z = allocator.allocate(1000, main_stream);
    ASSERT_GE(log.events.size(), before + 2);
    EXPECT_EQ(log.events[before].action, allocator_action::free_completed);
    EXPECT_EQ(log.events[before].address, x);
    EXPECT_EQ(z, x);  // the freed block is the best fit again
    EXPECT_EQ(stat_of("active_bytes.all.current"), 2048);
    EXPECT_EQ(allocator.check_consistency(), "");
}

TEST_F(CrossStream, SeveralStreamsMustAllFinish) {
    const device_address x = allocator.allocate(5 * (1u << 20), 1);
    allocator.record_stream(x, 2);
    allocator.record_stream(x, 3);
    allocator.free(x);
    EXPECT_EQ(dev.pending_events().size(), 2u);
    dev.complete_stream(2);
    allocator.process_events();
    EXPECT_EQ(log.count(allocator_action::free_completed), 0u);
    dev.complete_stream(3);
    allocator.process_events();
    EXPECT_EQ(log.count(allocator_action::free_completed), 1u);
    EXPECT_EQ(allocator.check_consistency(), "");
}

TEST_F(CrossStream, EmptyCacheSynchronizesPendingFrees) {
    const device_address x = allocator.allocate(30 * (1u << 20), 1);
    allocator.record_stream(x, 2);
    allocator.free(x);
    allocator.empty_cache();
    EXPECT_EQ(log.count(allocator_action::free_completed), 1u);
    EXPECT_EQ(log.count(allocator_action::segment_free), 1u);
    EXPECT_EQ(stat_of("num_sync_all_streams"), 1);
    EXPECT_EQ(stat_of("reserved_bytes.all.current"), 0);
    EXPECT_EQ(dev.calls().synchronize_event, 1u);
}

TEST_F(CrossStream, EventsAreReusedAcrossFrees) {
    for (int i = 0; i < 10; ++i) {
        const device_address x = allocator.allocate(4096, 1);
        allocator.record_stream(x, 2);
        allocator.free(x);
        dev.complete_all_events();
        allocator.process_events();
    }
    EXPECT_EQ(dev.calls().create_event, 1u);
    EXPECT_EQ(dev.calls().record_event, 10u);
}

}  // namespace
}  // namespace memtrail

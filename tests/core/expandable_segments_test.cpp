// expandable_segments:True: one growing segment per stream and pool, 2 MiB pages for the small
// pool and 20 MiB pages for the large pool, mapped on demand and unmapped by empty_cache.

#include <gtest/gtest.h>

#include "event_log.hpp"
#include "memtrail/core/caching_allocator.hpp"
#include "memtrail/core/simulated_device.hpp"

namespace memtrail {
namespace {

using testing::event_log;
constexpr uint64_t MiB = 1ull << 20;

class Expandable : public ::testing::Test {
  protected:
    Expandable()
        : dev(options()), allocator(dev, allocator_config::parse("expandable_segments:True")) {
        allocator.set_observer(&log);
    }
    ~Expandable() override { allocator.set_observer(nullptr); }
    static simulated_device_options options() {
        simulated_device_options o;
        o.capacity = 8ull << 30;
        return o;
    }
    int64_t stat_of(const std::string& name) const { return allocator.memory_stats().at(name); }
    simulated_device dev;
    device_allocator allocator;
    event_log log;
};

TEST_F(Expandable, SegmentsGrowPageByPageAndRequestsTileThem) {
    const device_address small = allocator.allocate(1000);
    EXPECT_EQ(allocator.allocated_size(small), 1024u);
    ASSERT_EQ(log.events[0].action, allocator_action::segment_map);
    EXPECT_EQ(log.events[0].size, 2 * MiB);
    EXPECT_EQ(stat_of("reserved_bytes.small_pool.current"), int64_t(2 * MiB));
    EXPECT_EQ(stat_of("segment.all.current"), 0);  // PyTorch counts mapped bytes, not segments

    const device_address a = allocator.allocate(30 * MiB);  // maps two 20 MiB pages
    EXPECT_EQ(allocator.allocated_size(a), 30 * MiB);
    const device_address b = allocator.allocate(15 * MiB);  // 10 MiB free + one more page
    EXPECT_EQ(b, a + 30 * MiB);
    EXPECT_EQ(stat_of("reserved_bytes.large_pool.current"), int64_t(60 * MiB));
    EXPECT_EQ(stat_of("num_device_alloc"), 3);
    EXPECT_EQ(log.count(allocator_action::segment_map), 3u);
    auto segments = allocator.snapshot(false);
    ASSERT_EQ(segments.size(), 2u);
    for (const auto& s : segments) {
        EXPECT_TRUE(s.is_expandable);
    }
    EXPECT_EQ(allocator.check_consistency(), "");

    allocator.free(a);
    allocator.free(b);
    allocator.free(small);
    EXPECT_EQ(stat_of("inactive_split.all.current"), 0);  // expandable blocks are left out
    allocator.empty_cache();
    EXPECT_EQ(stat_of("reserved_bytes.all.current"), 0);
    EXPECT_EQ(log.count(allocator_action::segment_unmap), 2u);
    EXPECT_EQ(stat_of("num_device_free"), 2);
    EXPECT_EQ(dev.used_bytes(), 0u);
    EXPECT_EQ(dev.calls().release_range, 2u);  // fully unmapped segments give their range back
    EXPECT_EQ(allocator.check_consistency(), "");
}

TEST_F(Expandable, EmptyCacheUnmapsOnlyWholeFreePages) {
    const device_address a = allocator.allocate(25 * MiB);  // pages 0-1 (40 MiB)
    const device_address b = allocator.allocate(10 * MiB);  // 25..35 MiB
    allocator.free(a);
    allocator.empty_cache();
    // Page 0 (0..20 MiB) is entirely free; page 1 holds b.
    ASSERT_EQ(log.events.back().action, allocator_action::segment_unmap);
    EXPECT_EQ(log.events.back().address, a);
    EXPECT_EQ(log.events.back().size, 20 * MiB);
    EXPECT_EQ(stat_of("reserved_bytes.all.current"), int64_t(20 * MiB));
    EXPECT_EQ(allocator.check_consistency(), "");
    // The next request re-maps at the lowest address that fits.
    const device_address c = allocator.allocate(20 * MiB);
    EXPECT_EQ(c, a);
    EXPECT_EQ(allocator.check_consistency(), "");
    allocator.free(b);
    allocator.free(c);
}

TEST_F(Expandable, MapFailureLeavesNothingBehindAndRetriesAfterUnmapping) {
    dev.set_capacity(100 * MiB);
    const device_address a = allocator.allocate(60 * MiB);  // 3 pages
    allocator.free(a);
    // 3 cached pages + 3 new ones exceed 100 MiB: the retry unmaps the cache first.
    const device_address b = allocator.allocate(50 * MiB, 5);
    EXPECT_EQ(stat_of("num_alloc_retries"), 1);
    EXPECT_EQ(stat_of("reserved_bytes.all.current"), int64_t(60 * MiB));
    EXPECT_EQ(allocator.check_consistency(), "");
    EXPECT_THROW(allocator.allocate(50 * MiB, 6), out_of_memory_error);
    EXPECT_EQ(allocator.check_consistency(), "");
    allocator.free(b);
}

}  // namespace
}  // namespace memtrail

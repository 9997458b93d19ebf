// PyTorch's placement rules with exact expected layouts and statistics. Offsets are taken from
// segment bases so the same expectations hold on the simulated device and on a real GPU.

#include <gtest/gtest.h>

#include "event_log.hpp"
#include "memtrail/core/caching_allocator.hpp"
#include "test_devices.hpp"

namespace memtrail {
namespace {

using namespace memtrail::testing;

class AllocatorRules : public ::testing::TestWithParam<std::string> {
  protected:
    void SetUp() override { dev_ = make_test_device(GetParam()); }
    device_allocator make(const char* conf = "") {
        return device_allocator(*dev_, allocator_config::parse(conf));
    }
    static int64_t stat_of(const device_allocator& a, const std::string& name) {
        return a.memory_stats().at(name);
    }
    std::unique_ptr<device> dev_;
};

TEST_P(AllocatorRules, SmallRequestsShareA2MiBSegmentIn512ByteSteps) {
    MEMTRAIL_REQUIRE_DEVICE(dev_, GetParam());
    auto a = make();
    const device_address x = a.allocate(1);
    const device_address y = a.allocate(1000);
    const device_address z = a.allocate(512);
    EXPECT_EQ(y, x + 512);
    EXPECT_EQ(z, y + 1024);
    EXPECT_EQ(a.allocated_size(x), 512u);
    EXPECT_EQ(a.allocated_size(y), 1024u);
    auto segments = a.snapshot(false);
    ASSERT_EQ(segments.size(), 1u);
    EXPECT_FALSE(segments[0].is_large);
    EXPECT_EQ(segments[0].total_size, 2 * MiB);
    ASSERT_EQ(segments[0].blocks.size(), 4u);
    EXPECT_EQ(segments[0].blocks[3].size, 2 * MiB - 2048);
    EXPECT_EQ(stat_of(a, "segment.small_pool.current"), 1);
    EXPECT_EQ(stat_of(a, "reserved_bytes.all.current"), int64_t(2 * MiB));
    EXPECT_EQ(stat_of(a, "allocated_bytes.small_pool.current"), 2048);
    EXPECT_EQ(stat_of(a, "requested_bytes.all.current"), 1 + 1000 + 512);
    EXPECT_EQ(stat_of(a, "inactive_split.all.current"), 1);
    EXPECT_EQ(stat_of(a, "inactive_split_bytes.all.current"), int64_t(2 * MiB - 2048));
    EXPECT_EQ(a.check_consistency(), "");
}

TEST_P(AllocatorRules, MidSizedRequestsShareA20MiBSegmentAndBestFitReusesTheRemainder) {
    MEMTRAIL_REQUIRE_DEVICE(dev_, GetParam());
    auto a = make();
    const device_address x = a.allocate(MiB + 1);  // large pool, 1 MiB + 512
    EXPECT_EQ(a.allocated_size(x), MiB + 512);
    auto segments = a.snapshot(false);
    ASSERT_EQ(segments.size(), 1u);
    EXPECT_TRUE(segments[0].is_large);
    EXPECT_EQ(segments[0].total_size, 20 * MiB);
    // 10 MiB would get its own segment, but the 19 MiB remainder fits it best.
    const device_address y = a.allocate(10 * MiB);
    EXPECT_EQ(y, x + MiB + 512);
    EXPECT_EQ(a.snapshot(false).size(), 1u);
    EXPECT_EQ(stat_of(a, "num_device_alloc"), 1);
    EXPECT_EQ(a.check_consistency(), "");
}

TEST_P(AllocatorRules, LargeRequestsRoundTo2MiBAndKeepRemaindersUnderOneMiBUnsplit) {
    MEMTRAIL_REQUIRE_DEVICE(dev_, GetParam());
    auto a = make();
    const device_address x = a.allocate(11 * MiB + 1);
    // The segment is 12 MiB; the 1 MiB - 512 B remainder is too small to split off.
    EXPECT_EQ(a.allocated_size(x), 12 * MiB);
    EXPECT_EQ(stat_of(a, "requested_bytes.large_pool.current"), int64_t(11 * MiB + 1));
    EXPECT_EQ(stat_of(a, "allocated_bytes.large_pool.current"), int64_t(12 * MiB));
    EXPECT_EQ(stat_of(a, "inactive_split.all.current"), 0);
}

TEST_P(AllocatorRules, FreeMergesNeighboursAndEmptyCacheReleasesWholeSegments) {
    MEMTRAIL_REQUIRE_DEVICE(dev_, GetParam());
    event_log log;
    auto a = make();
    a.set_observer(&log);
    const device_address x = a.allocate(4096);
    const device_address y = a.allocate(4096);
    const device_address z = a.allocate(4096);
    a.free(y);
    EXPECT_EQ(stat_of(a, "inactive_split.small_pool.current"), 2);
    a.free(x);  // merges with y's free block
    EXPECT_EQ(stat_of(a, "inactive_split.small_pool.current"), 2);
    EXPECT_EQ(stat_of(a, "inactive_split_bytes.small_pool.current"), int64_t(2 * MiB - 4096));
    EXPECT_EQ(a.check_consistency(), "");
    a.empty_cache();  // the segment still holds z: nothing to release
    EXPECT_EQ(stat_of(a, "segment.all.current"), 1);
    a.free(z);
    auto segments = a.snapshot(false);
    ASSERT_EQ(segments.size(), 1u);
    EXPECT_EQ(segments[0].blocks.size(), 1u);
    EXPECT_EQ(stat_of(a, "inactive_split.all.current"), 0);
    a.empty_cache();
    EXPECT_EQ(stat_of(a, "segment.all.current"), 0);
    EXPECT_EQ(stat_of(a, "reserved_bytes.all.current"), 0);
    EXPECT_EQ(stat_of(a, "num_device_free"), 1);
    EXPECT_EQ(stat_of(a, "num_sync_all_streams"), 2);
    const std::vector<allocator_action> expected = {
        allocator_action::segment_alloc,  allocator_action::alloc,
        allocator_action::alloc,          allocator_action::alloc,
        allocator_action::free_requested, allocator_action::free_completed,
        allocator_action::free_requested, allocator_action::free_completed,
        allocator_action::free_requested, allocator_action::free_completed,
        allocator_action::segment_free};
    EXPECT_EQ(log.actions(), expected);
    EXPECT_EQ(log.events[1].size, 4096u);
    EXPECT_EQ(log.events[0].size, 2 * MiB);
    a.set_observer(nullptr);
}

TEST_P(AllocatorRules, FreeBlocksAreReusedOnlyOnTheirOwnStream) {
    MEMTRAIL_REQUIRE_DEVICE(dev_, GetParam());
    auto a = make();
    const device_address x = a.allocate(8 * MiB, 0);
    a.free(x);
    const device_address y = a.allocate(8 * MiB, 0);
    EXPECT_EQ(y, x);
    a.free(y);
    // Another stream: the cached block is not eligible, a second segment is made.
    // (Any non-zero handle works on the simulated device; on CUDA use the per-thread stream.)
    const stream_handle other = GetParam() == "cuda" ? 2 : 77;
    const device_address z = a.allocate(8 * MiB, other);
    EXPECT_NE(z, x);
    EXPECT_EQ(stat_of(a, "segment.large_pool.current"), 2);
    a.free(z);
    a.empty_cache();
}

TEST_P(AllocatorRules, BestFitOrdersBySizeThenAddress) {
    MEMTRAIL_REQUIRE_DEVICE(dev_, GetParam());
    auto a = make();
    const device_address big = a.allocate(40 * MiB);
    const device_address medium = a.allocate(30 * MiB);
    const device_address medium2 = a.allocate(30 * MiB);
    a.free(big);
    a.free(medium2);
    a.free(medium);
    // 25 MiB fits both 30 MiB blocks and the 40 MiB one: the smaller size wins, then the lower
    // address. Oversize remainders (over 1 MiB) are split off.
    const device_address got = a.allocate(25 * MiB);
    EXPECT_EQ(got, std::min(medium, medium2));
    EXPECT_EQ(a.allocated_size(got), 25 * MiB);
    EXPECT_EQ(a.check_consistency(), "");
}

TEST_P(AllocatorRules, RoundupPower2DivisionsRoundsLikePyTorch) {
    MEMTRAIL_REQUIRE_DEVICE(dev_, GetParam());
    auto a = make("roundup_power2_divisions:4");
    // 5 MiB + 1 lies between 4 and 8 MiB; four steps of 1 MiB: rounds to 6 MiB.
    const device_address x = a.allocate(5 * MiB + 1);
    EXPECT_EQ(a.allocated_size(x), 6 * MiB);
    // Below 512 * divisions bytes plain 512-byte rounding applies.
    const device_address y = a.allocate(1200);
    EXPECT_EQ(a.allocated_size(y), 1536u);
    // Powers of two stay as they are.
    const device_address z = a.allocate(16 * MiB);
    EXPECT_EQ(a.allocated_size(z), 16 * MiB);
    auto b = make("roundup_power2_divisions:[1:2,>:8]");
    const device_address w = b.allocate(3 * MiB + 1);  // index 1 (2-4 MiB): 8 steps of 256 KiB
    EXPECT_EQ(b.allocated_size(w), 3 * MiB + 256 * KiB);
    const device_address v = b.allocate(768 * KiB + 1);  // index 0: 2 steps of 256 KiB
    EXPECT_EQ(b.allocated_size(v), MiB);
}

TEST_P(AllocatorRules, OversizeBlocksAreNeverSplitAndOnlyServeCloseRequests) {
    MEMTRAIL_REQUIRE_DEVICE(dev_, GetParam());
    auto a = make("max_split_size_mb:64");
    const device_address x = a.allocate(100 * MiB);
    EXPECT_EQ(stat_of(a, "oversize_segments.current"), 1);
    EXPECT_EQ(stat_of(a, "oversize_allocations.current"), 1);
    a.free(x);
    // A non-oversize request never takes an oversize block.
    const device_address y = a.allocate(50 * MiB);
    EXPECT_NE(y, x);
    // An oversize request 20 MiB or more smaller than the block does not take it either.
    const device_address z = a.allocate(70 * MiB);
    EXPECT_NE(z, x);
    // Within 20 MiB: reused whole, not split.
    const device_address w = a.allocate(90 * MiB);
    EXPECT_EQ(w, x);
    EXPECT_EQ(a.allocated_size(w), 100 * MiB);
    EXPECT_EQ(stat_of(a, "max_split_size"), int64_t(64 * MiB));
    EXPECT_EQ(stat_of(a, "oversize_allocations.current"), 2);
    EXPECT_EQ(stat_of(a, "oversize_segments.current"), 2);
    EXPECT_EQ(a.check_consistency(), "");
    a.free(y);
    a.free(z);
    a.free(w);
    a.empty_cache();
    EXPECT_EQ(stat_of(a, "oversize_segments.current"), 0);
}

TEST_P(AllocatorRules, ResetsOfPeaksAndAccumulatedCounters) {
    MEMTRAIL_REQUIRE_DEVICE(dev_, GetParam());
    auto a = make();
    const device_address x = a.allocate(30 * MiB);
    a.free(x);
    EXPECT_EQ(stat_of(a, "allocated_bytes.all.peak"), int64_t(30 * MiB));
    a.reset_peak_stats();
    EXPECT_EQ(stat_of(a, "allocated_bytes.all.peak"), 0);
    EXPECT_EQ(stat_of(a, "allocated_bytes.all.allocated"), int64_t(30 * MiB));
    a.reset_accumulated_stats();
    EXPECT_EQ(stat_of(a, "allocated_bytes.all.allocated"), 0);
    EXPECT_EQ(stat_of(a, "allocated_bytes.all.freed"), 0);
    EXPECT_EQ(stat_of(a, "num_device_alloc"), 0);
    EXPECT_EQ(stat_of(a, "reserved_bytes.all.current"), int64_t(30 * MiB));
    a.empty_cache();
}

TEST_P(AllocatorRules, MemoryFractionCapsTheAllocatorAndTheRetryFreesTheCache) {
    MEMTRAIL_REQUIRE_DEVICE(dev_, GetParam());
    auto a = make();
    const uint64_t total = dev_->get_memory_info().total;
    a.set_memory_fraction(static_cast<double>(512 * MiB) / static_cast<double>(total));
    const device_address x = a.allocate(300 * MiB);
    a.free(x);
    // 300 cached + 400 new is over the 512 MiB allowed: the cache is released and the
    // allocation retried.
    const device_address y = a.allocate(400 * MiB);
    EXPECT_EQ(stat_of(a, "num_alloc_retries"), 1);
    EXPECT_EQ(stat_of(a, "num_sync_all_streams"), 1);
    EXPECT_EQ(stat_of(a, "num_device_free"), 1);
    EXPECT_EQ(stat_of(a, "reserved_bytes.all.current"), int64_t(400 * MiB));
    // 400 + 200 > 512 even after the retry: out of memory, with PyTorch's accounting.
    uint64_t observed_size = 0;
    a.add_oom_observer([&](int, uint64_t size, uint64_t, uint64_t) { observed_size = size; });
    try {
        a.allocate(200 * MiB);
        FAIL() << "expected out of memory";
    } catch (const out_of_memory_error& e) {
        const std::string message = e.what();
        EXPECT_NE(message.find("Tried to allocate 200.00 MiB"), std::string::npos) << message;
        EXPECT_NE(message.find("allowed"), std::string::npos) << message;
        EXPECT_NE(message.find("400.00 MiB is allocated"), std::string::npos) << message;
    }
    EXPECT_EQ(observed_size, 200 * MiB);
    EXPECT_EQ(stat_of(a, "num_ooms"), 1);
    EXPECT_EQ(stat_of(a, "num_alloc_retries"), 2);
    EXPECT_EQ(a.check_consistency(), "");
    a.free(y);
    a.empty_cache();
}

INSTANTIATE_TEST_SUITE_P(Devices, AllocatorRules, ::testing::Values("sim", "cuda"),
                         device_kind_name);

}  // namespace
}  // namespace memtrail

// Private pools as torch 2.11 keeps them (CUDA graphs, torch.cuda.MemPool): which allocations go
// to a pool, what its memory serves, when it is given back, and what a capture defers.

#include <gtest/gtest.h>

#include "event_log.hpp"
#include "memtrail/core/caching_allocator.hpp"
#include "memtrail/core/simulated_device.hpp"

namespace memtrail {
namespace {

using testing::event_log;

constexpr uint64_t MiB = 1ull << 20;
constexpr pool_id user_pool{0, 1};   // torch.cuda.MemPool()
constexpr pool_id graph_pool{1, 0};  // a capture's own pool

stream_filter every_stream() {
    return [](stream_handle) { return true; };
}

class PrivatePools : public ::testing::Test {
  protected:
    PrivatePools() { allocator.set_observer(&log); }
    ~PrivatePools() override { allocator.set_observer(nullptr); }
    int64_t stat_of(const std::string& name) const { return allocator.memory_stats().at(name); }
    segment_info segment_at(device_address address) const {
        for (const auto& s : allocator.snapshot(false)) {
            if (address >= s.address && address < s.address + s.total_size) {
                return s;
            }
        }
        ADD_FAILURE() << "no segment holds " << address;
        return {};
    }
    simulated_device dev;
    device_allocator allocator{dev};
    event_log log;
};

TEST_F(PrivatePools, APoolsAllocationsNeverUseTheDefaultPoolsMemory) {
    // The sequence of the MemPool trace recorded with torch 2.11: a 4 MiB tensor outside the
    // pool leaves 16 MiB free in its 20 MiB segment, yet a 4 MiB tensor inside the pool gets a
    // segment of its own.
    const device_address outside = allocator.allocate(4 * MiB);
    allocator.begin_allocate_to_pool(user_pool, every_stream());
    const size_t segments_before = log.count(allocator_action::segment_alloc);
    const device_address inside = allocator.allocate(4 * MiB);
    EXPECT_EQ(log.count(allocator_action::segment_alloc), segments_before + 1);
    EXPECT_NE(segment_at(inside).address, segment_at(outside).address);
    EXPECT_EQ(segment_at(inside).pool, user_pool);
    EXPECT_EQ(segment_at(outside).pool, pool_id{});
    EXPECT_EQ(log.events.back().pool, user_pool);
    allocator.end_allocate_to_pool(user_pool);

    // ...and the default pool's allocations never use the pool's free memory.
    allocator.free(inside);
    const device_address after = allocator.allocate(4 * MiB);
    EXPECT_EQ(segment_at(after).address, segment_at(outside).address);
    EXPECT_EQ(allocator.check_consistency(), "");
}

TEST_F(PrivatePools, OnlyWhatTheFilterAcceptsGoesToThePool) {
    const stream_handle capture_stream = 7, other = 9;
    allocator.begin_allocate_to_pool(graph_pool,
                                     [=](stream_handle s) { return s == capture_stream; });
    const device_address captured = allocator.allocate(1000, capture_stream);
    const device_address beside = allocator.allocate(1000, other);
    EXPECT_EQ(segment_at(captured).pool, graph_pool);
    EXPECT_EQ(segment_at(beside).pool, pool_id{});
    allocator.end_allocate_to_pool(graph_pool);
    EXPECT_EQ(segment_at(allocator.allocate(1000, capture_stream)).pool, pool_id{});
}

TEST_F(PrivatePools, NestedPoolsAreSearchedNewestFirst) {
    allocator.begin_allocate_to_pool(user_pool, every_stream());
    allocator.begin_allocate_to_pool(pool_id{0, 2}, every_stream());
    EXPECT_EQ(segment_at(allocator.allocate(1000)).pool, (pool_id{0, 2}));
    allocator.end_allocate_to_pool(pool_id{0, 2});
    EXPECT_EQ(segment_at(allocator.allocate(1000)).pool, user_pool);
    allocator.end_allocate_to_pool(user_pool);
}

TEST_F(PrivatePools, APoolsMemoryIsKeptUntilItIsReleasedThenGivenBackAndThePoolDeleted) {
    allocator.begin_allocate_to_pool(user_pool, every_stream());
    const device_address a = allocator.allocate(30 * MiB);
    allocator.end_allocate_to_pool(user_pool);
    EXPECT_EQ(allocator.pool_use_count(user_pool), 1);
    allocator.free(a);

    // Not released: empty_cache keeps the pool's cached segment (a graph may replay into it).
    allocator.empty_cache();
    EXPECT_EQ(stat_of("reserved_bytes.all.current"), static_cast<int64_t>(30 * MiB));
    EXPECT_EQ(log.count(allocator_action::segment_free), 0u);

    allocator.release_pool(user_pool);
    EXPECT_EQ(allocator.pool_use_count(user_pool), 0);
    EXPECT_EQ(stat_of("reserved_bytes.all.current"), static_cast<int64_t>(30 * MiB));
    allocator.empty_cache();
    EXPECT_EQ(stat_of("reserved_bytes.all.current"), 0);
    EXPECT_EQ(log.count(allocator_action::segment_free), 1u);
    EXPECT_EQ(log.events.back().pool, user_pool);

    // Deleted: the same id makes a new pool.
    allocator.create_pool(user_pool);
    EXPECT_EQ(allocator.pool_use_count(user_pool), 1);
    EXPECT_EQ(allocator.check_consistency(), "");
}

// The segments given back since `from`, in order: (size, address).
std::vector<std::pair<uint64_t, device_address>> segment_frees(const event_log& log, size_t from) {
    std::vector<std::pair<uint64_t, device_address>> frees;
    for (size_t i = from; i < log.events.size(); ++i) {
        if (log.events[i].action == allocator_action::segment_free) {
            frees.emplace_back(log.events[i].size, log.events[i].address);
        }
    }
    return frees;
}

// Large (4, 5, 6 MiB in one 20 MiB segment; three 24 MiB) and small (256 KiB) tensors made in
// alternation, as the mempool_release trace recorded with torch 2.11 makes them, then freed.
void allocate_and_free_mixed_sizes(device_allocator& allocator) {
    std::vector<device_address> kept;
    for (uint64_t i = 0; i < 3; ++i) {
        kept.push_back(allocator.allocate((4 + i) * MiB));
        kept.push_back(allocator.allocate(256 * 1024));
        kept.push_back(allocator.allocate(24 * MiB));
    }
    for (auto it = kept.rbegin(); it != kept.rend(); ++it) {
        allocator.free(*it);
    }
}

TEST_F(PrivatePools, AnEmptiedPoolGivesBackItsSmallSegmentsBeforeItsLargeOnes) {
    // PyTorch's release_cached_blocks empties a private pool's small blocks, then its large
    // ones, each in the pool's order (size, then address): the 2 MiB segment first.
    allocator.create_pool(user_pool);
    allocator.begin_allocate_to_pool(user_pool, every_stream());
    allocate_and_free_mixed_sizes(allocator);
    allocator.end_allocate_to_pool(user_pool);
    allocator.release_pool(user_pool);  // use_mem_pool's scope ends
    allocator.release_pool(user_pool);  // the MemPool is destroyed, then empties itself
    const size_t before = log.events.size();
    allocator.empty_cache(user_pool);
    const auto frees = segment_frees(log, before);
    ASSERT_EQ(frees.size(), 5u);
    EXPECT_EQ(frees[0].first, 2 * MiB);
    EXPECT_EQ(frees[1].first, 20 * MiB);
    for (size_t i = 2; i < frees.size(); ++i) {
        EXPECT_EQ(frees[i].first, 24 * MiB);
        EXPECT_GT(frees[i].second, frees[i - 1].second) << "24 MiB segments by address";
    }
    EXPECT_EQ(stat_of("reserved_bytes.all.current"), 0);
}

TEST_F(PrivatePools, TheDefaultPoolsGiveBackTheirLargeSegmentsBeforeTheirSmallOnes) {
    // The same tensors outside any pool: empty_cache gives back large blocks first, and a
    // released private pool's (small, then large) after the default pools'.
    allocate_and_free_mixed_sizes(allocator);
    allocator.begin_allocate_to_pool(user_pool, every_stream());
    allocator.free(allocator.allocate(256 * 1024));
    allocator.free(allocator.allocate(4 * MiB));
    allocator.end_allocate_to_pool(user_pool);
    allocator.release_pool(user_pool);
    const size_t before = log.events.size();
    allocator.empty_cache();
    std::vector<uint64_t> sizes;
    for (const auto& [size, address] : segment_frees(log, before)) {
        sizes.push_back(size);
    }
    EXPECT_EQ(sizes, (std::vector<uint64_t>{20 * MiB, 24 * MiB, 24 * MiB, 24 * MiB, 2 * MiB,
                                            2 * MiB, 20 * MiB}));
}

TEST_F(PrivatePools, AReleasedPoolWithLiveTensorsStaysUntilTheyAreFreed) {
    allocator.begin_allocate_to_pool(graph_pool, every_stream());
    const device_address output = allocator.allocate(30 * MiB);
    allocator.end_allocate_to_pool(graph_pool);
    allocator.release_pool(graph_pool);  // the graph is gone, its output tensor is not
    allocator.empty_cache();
    EXPECT_EQ(stat_of("reserved_bytes.all.current"), static_cast<int64_t>(30 * MiB));
    EXPECT_EQ(segment_at(output).pool, graph_pool);
    allocator.free(output);
    allocator.empty_cache();
    EXPECT_EQ(stat_of("reserved_bytes.all.current"), 0);
    EXPECT_EQ(allocator.pool_use_count(graph_pool), 0);
}

TEST_F(PrivatePools, SharedPoolsCountTheirUses) {
    allocator.create_pool(user_pool);                             // the MemPool object
    allocator.begin_allocate_to_pool(user_pool, every_stream());  // use_mem_pool
    EXPECT_EQ(allocator.pool_use_count(user_pool), 2);
    allocator.end_allocate_to_pool(user_pool);
    allocator.release_pool(user_pool);
    EXPECT_EQ(allocator.pool_use_count(user_pool), 1);
    allocator.release_pool(user_pool);
    EXPECT_EQ(allocator.pool_use_count(user_pool), 0);
}

TEST_F(PrivatePools, NoSplitPoolsHandOutWholeBlocks) {
    allocator.create_pool(user_pool, pool_options{.no_split = true});
    allocator.begin_allocate_to_pool(user_pool, every_stream());
    const device_address a = allocator.allocate(1000);
    allocator.end_allocate_to_pool(user_pool);
    const segment_info segment = segment_at(a);
    ASSERT_EQ(segment.blocks.size(), 1u);
    EXPECT_EQ(segment.blocks[0].size, 2 * MiB);  // the whole small segment, not 1024 bytes
}

TEST_F(PrivatePools, UseOnOomPoolsAreTheLastResort) {
    simulated_device_options options;
    options.capacity = 64 * MiB;
    simulated_device small_device(options);
    device_allocator limited(small_device);
    limited.create_pool(user_pool, pool_options{.use_on_oom = true});
    limited.begin_allocate_to_pool(user_pool, every_stream());
    const device_address reserve = limited.allocate(40 * MiB);
    limited.end_allocate_to_pool(user_pool);
    limited.free(reserve);                                  // 40 MiB cached in the pool
    const device_address big = limited.allocate(30 * MiB);  // the device has only 24 MiB left
    EXPECT_EQ(big, reserve);
    EXPECT_EQ(limited.stats().num_ooms, 0);
}

TEST_F(PrivatePools, DuringACaptureCrossStreamFreesWaitForItsEnd) {
    dev.set_events_complete_immediately(false);
    const stream_handle side = 20;
    const device_address x = allocator.allocate(1000);
    allocator.record_stream(x, side);
    allocator.begin_allocate_to_pool(graph_pool, [](stream_handle s) { return s == 5; });
    allocator.free(x);
    EXPECT_EQ(log.count(allocator_action::free_requested), 1u);
    EXPECT_TRUE(dev.pending_events().empty());  // no event recorded while capturing
    const uint64_t queries = dev.calls().query_event;
    allocator.allocate(1000, 5);
    EXPECT_EQ(dev.calls().query_event, queries);  // and none queried
    allocator.end_allocate_to_pool(graph_pool);

    allocator.allocate(1000);  // after the capture: the deferred event is recorded now
    EXPECT_EQ(dev.pending_events().size(), 1u);
    EXPECT_EQ(log.count(allocator_action::free_completed), 0u);
    dev.complete_stream(side);
    allocator.allocate(1000);
    EXPECT_EQ(log.count(allocator_action::free_completed), 1u);
    EXPECT_EQ(allocator.check_consistency(), "");
}

TEST_F(PrivatePools, StreamUsesRecordedDuringTheCaptureEndWithIt) {
    dev.set_events_complete_immediately(false);
    allocator.begin_allocate_to_pool(graph_pool, every_stream());
    const device_address x = allocator.allocate(1000, 5);
    allocator.record_stream(x, 6);
    allocator.free(x);
    allocator.end_allocate_to_pool(graph_pool);
    allocator.allocate(1000, 5);  // the graph orders stream 6's use: freed without an event
    EXPECT_TRUE(dev.pending_events().empty());
    EXPECT_EQ(log.count(allocator_action::free_completed), 1u);
}

TEST_F(PrivatePools, AnOomDuringACaptureDoesNotFlushTheCache) {
    simulated_device_options options;
    options.capacity = 64 * MiB;
    simulated_device small_device(options);
    device_allocator limited(small_device);
    event_log limited_log;
    limited.set_observer(&limited_log);
    limited.free(limited.allocate(40 * MiB));  // cached in the default pool
    limited.begin_allocate_to_pool(graph_pool, every_stream());
    EXPECT_THROW(limited.allocate(30 * MiB), out_of_memory_error);
    EXPECT_EQ(limited_log.count(allocator_action::segment_free), 0u);
    EXPECT_EQ(limited.stats().num_alloc_retries, 0);
    limited.end_allocate_to_pool(graph_pool);
    EXPECT_NO_THROW(limited.allocate(50 * MiB));  // outside the capture the flush happens
    EXPECT_EQ(limited_log.count(allocator_action::segment_free), 1u);
    limited.set_observer(nullptr);
}

TEST_F(PrivatePools, TheOomMessageCountsCachedPrivatePoolMemoryAsPyTorchDoes) {
    simulated_device_options options;
    options.capacity = 64 * MiB;
    simulated_device small_device(options);
    device_allocator limited(small_device);
    limited.begin_allocate_to_pool(graph_pool, every_stream());
    limited.free(limited.allocate(40 * MiB));
    limited.end_allocate_to_pool(graph_pool);
    try {
        limited.allocate(40 * MiB);
        FAIL() << "expected an OOM";
    } catch (const out_of_memory_error& e) {
        EXPECT_NE(std::string(e.what()).find("with 40.00 MiB allocated in private pools"),
                  std::string::npos)
            << e.what();
    }
}

TEST_F(PrivatePools, MisuseIsRefusedWithTheReason) {
    EXPECT_THROW(allocator.end_allocate_to_pool(user_pool), usage_error);
    EXPECT_THROW(allocator.release_pool(user_pool), usage_error);
    allocator.begin_allocate_to_pool(user_pool, every_stream());
    EXPECT_THROW(allocator.begin_allocate_to_pool(user_pool, every_stream()), usage_error);
    EXPECT_THROW(allocator.begin_allocate_to_pool(graph_pool, nullptr), usage_error);
    allocator.end_allocate_to_pool(user_pool);
    allocator.release_pool(user_pool);
    EXPECT_THROW(allocator.release_pool(user_pool), usage_error);
    EXPECT_EQ(allocator.check_consistency(), "");
}

}  // namespace
}  // namespace memtrail

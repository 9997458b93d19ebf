// Private pools through the recorder on the simulated device: allocations inside and outside a
// pool, the pool on the segments of a dumped snapshot (memtrail's format and PyTorch's pickle),
// release and empty_cache giving the memory back, allocations during a CUDA graph capture that
// nobody announced, and the memory fraction among the snapshot's settings.

#include <gtest/gtest.h>

#include <filesystem>
#include <thread>

#include "memtrail/core/simulated_device.hpp"
#include "memtrail/recorder/recorder.hpp"
#include "memtrail/snapshot/msgpack_format.hpp"
#include "memtrail/snapshot/torch_pickle.hpp"

namespace {

using namespace memtrail;

constexpr uint64_t MiB = 1ull << 20;
constexpr stream_handle capture_stream = 0x5000;
constexpr stream_handle side_stream = 0x6000;

class private_pools_test : public ::testing::Test {
  protected:
    simulated_device gpu;
    caching_allocator allocator{{&gpu}};
    recorder::recorder history{allocator};

    std::filesystem::path output(const char* name) const {
        return std::filesystem::path(::testing::TempDir()) / name;
    }
};

// The pool of the segment that holds `address`.
pool_id pool_of(const snapshot::snapshot& s, device_address address) {
    for (const snapshot::segment& seg : s.segments) {
        if (address >= seg.address && address < seg.address + seg.total_size) {
            return {seg.pool_id_first, seg.pool_id_second};
        }
    }
    ADD_FAILURE() << "no segment holds " << address;
    return {};
}

TEST_F(private_pools_test, the_calling_threads_allocations_go_to_the_pool_until_it_ends) {
    const pool_id pool{0, 1};
    const std::thread::id owner = std::this_thread::get_id();
    history.begin_allocate_to_pool(
        0, pool, [owner](stream_handle) { return std::this_thread::get_id() == owner; });
    const device_address inside = history.allocate(4 * MiB, 0);
    device_address other_thread = 0;
    std::thread([&] { other_thread = history.allocate(4 * MiB, 0); }).join();
    history.end_allocate_to_pool(0, pool);
    const device_address outside = history.allocate(4 * MiB, 0);

    const snapshot::snapshot taken = history.take_snapshot();
    EXPECT_EQ(pool_of(taken, inside), pool);
    EXPECT_EQ(pool_of(taken, other_thread), pool_id{});
    EXPECT_EQ(pool_of(taken, outside), pool_id{});
    EXPECT_EQ(history.pool_use_count(0, pool), 1);
}

TEST_F(private_pools_test, dumped_snapshots_keep_the_pool_of_every_segment) {
    const pool_id pool{3, 0};
    history.begin_allocate_to_pool(0, pool, [](stream_handle s) { return s == capture_stream; });
    const device_address inside = history.allocate(30 * MiB, 0, capture_stream);
    const device_address beside = history.allocate(30 * MiB, 0, side_stream);
    history.end_allocate_to_pool(0, pool);

    history.dump_snapshot(output("pools.memtrail"));
    history.dump_snapshot(output("pools.pickle"));
    for (const snapshot::snapshot& read : {snapshot::read_snapshot(output("pools.memtrail")),
                                           snapshot::read_torch_pickle(output("pools.pickle"))}) {
        EXPECT_EQ(pool_of(read, inside), pool);
        EXPECT_EQ(pool_of(read, beside), pool_id{});
    }
}

TEST_F(private_pools_test, a_released_pool_gives_its_memory_back_at_empty_cache) {
    const pool_id pool{0, 2};
    history.create_pool(0, pool, {.no_split = true});
    history.begin_allocate_to_pool(0, pool, [](stream_handle) { return true; });
    const device_address a = history.allocate(8 * MiB, 0);
    history.end_allocate_to_pool(0, pool);
    history.free(a);
    const uint64_t held = gpu.used_bytes();
    ASSERT_GT(held, 0u);

    history.empty_cache();  // the pool still has uses: its cached block stays
    EXPECT_EQ(gpu.used_bytes(), held);
    EXPECT_EQ(history.pool_use_count(0, pool), 2);  // create, then begin

    history.release_pool(0, pool);
    history.empty_pool_cache(0, pool);  // one use left: nothing yet
    EXPECT_EQ(gpu.used_bytes(), held);
    history.release_pool(0, pool);
    EXPECT_EQ(history.pool_use_count(0, pool), 0);
    history.empty_pool_cache(0, pool);
    EXPECT_EQ(gpu.used_bytes(), 0u);
    EXPECT_TRUE(history.take_snapshot().segments.empty());
    EXPECT_THROW(history.release_pool(0, pool), usage_error);  // gone with its last segment
}

TEST_F(private_pools_test, pool_calls_name_a_device_that_does_not_exist) {
    EXPECT_THROW(history.create_pool(1, pool_id{0, 1}), usage_error);
    EXPECT_THROW(history.end_allocate_to_pool(0, pool_id{0, 1}), usage_error);
}

// A capture the allocator was not told about (PyTorch's plain CUDAPluggableAllocator): the event
// of a cross-stream free is pending, and querying it during the capture would invalidate it.
class unannounced_capture_test : public private_pools_test {
  protected:
    void SetUp() override {
        gpu.set_events_complete_immediately(false);
        const device_address used_elsewhere = history.allocate(MiB, 0, capture_stream);
        allocator.record_stream(used_elsewhere, side_stream);
        history.free(used_elsewhere);
        ASSERT_EQ(gpu.pending_events().size(), 1u);
    }
};

TEST_F(unannounced_capture_test, the_allocator_alone_would_invalidate_the_capture) {
    gpu.begin_capture(capture_stream);
    EXPECT_THROW(allocator.allocate(MiB, 0, capture_stream), device_error);
}

TEST_F(unannounced_capture_test, allocations_go_to_a_pool_of_the_capture_that_is_kept) {
    const uint64_t capture = gpu.begin_capture(capture_stream);
    const device_address captured = history.allocate(2 * MiB, 0, capture_stream);
    history.free(captured);  // reused within the capture only
    const device_address again = history.allocate(2 * MiB, 0, capture_stream);
    EXPECT_EQ(again, captured);
    const device_address beside = history.allocate(2 * MiB, 0, side_stream);
    history.free(again);
    gpu.end_capture(capture_stream);

    const device_address after = history.allocate(2 * MiB, 0, capture_stream);
    const snapshot::snapshot taken = history.take_snapshot();
    EXPECT_EQ(pool_of(taken, captured), (pool_id{capture, 0}));
    EXPECT_EQ(pool_of(taken, beside), pool_id{});
    EXPECT_EQ(pool_of(taken, after), pool_id{});
    EXPECT_NE(after, captured);

    // Never released: empty_cache keeps the graph's memory, which it may replay into.
    history.empty_cache();
    EXPECT_EQ(pool_of(history.take_snapshot(), captured), (pool_id{capture, 0}));
    EXPECT_EQ(history.pool_use_count(0, pool_id{capture, 0}), 1);
}

TEST_F(unannounced_capture_test, a_free_at_the_start_of_a_capture_waits_like_one_during_it) {
    const device_address used_beside = history.allocate(MiB, 0, capture_stream);
    allocator.record_stream(used_beside, side_stream);
    const uint64_t events_recorded = gpu.calls().record_event;
    const uint64_t capture = gpu.begin_capture(capture_stream);
    history.free(used_beside, 0, 0, capture_stream);  // before any allocation of the capture
    EXPECT_TRUE(allocator.on(0).allocates_to_pool(capture_stream));
    // Its cross-stream uses get no event now: the free completes after the capture.
    EXPECT_EQ(gpu.calls().record_event, events_recorded);
    const device_address captured = history.allocate(MiB, 0, capture_stream);
    EXPECT_EQ(pool_of(history.take_snapshot(), captured), (pool_id{capture, 0}));
    gpu.end_capture(capture_stream);
}

TEST_F(unannounced_capture_test, an_announced_capture_keeps_its_own_pool) {
    gpu.begin_capture(capture_stream);
    const pool_id announced{7, 0};
    history.begin_allocate_to_pool(0, announced,
                                   [](stream_handle s) { return s == capture_stream; });
    const device_address captured = history.allocate(2 * MiB, 0, capture_stream);
    history.end_allocate_to_pool(0, announced);
    gpu.end_capture(capture_stream);
    EXPECT_EQ(pool_of(history.take_snapshot(), captured), announced);
}

TEST_F(private_pools_test, the_memory_fraction_is_among_the_snapshot_settings) {
    EXPECT_FALSE(history.take_snapshot().settings.other.contains("per_process_memory_fraction"));
    allocator.on(0).set_memory_fraction(0.25);
    history.dump_snapshot(output("fraction.memtrail"));
    history.dump_snapshot(output("fraction.pickle"));
    for (const snapshot::snapshot& read :
         {snapshot::read_snapshot(output("fraction.memtrail")),
          snapshot::read_torch_pickle(output("fraction.pickle"))}) {
        ASSERT_TRUE(read.settings.other.contains("per_process_memory_fraction"));
        EXPECT_DOUBLE_EQ(std::stod(read.settings.other.at("per_process_memory_fraction")), 0.25);
    }
}

}  // namespace

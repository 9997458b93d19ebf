// The recorded history as a whole: the ring's bound and dropped count, many threads at once
// (nothing lost or duplicated, counts equal to the allocator's statistics), and round trips
// through memtrail's format and PyTorch's pickle.

#include <gtest/gtest.h>

#include <map>
#include <random>
#include <set>
#include <thread>
#include <vector>

#include "memtrail/core/simulated_device.hpp"
#include "memtrail/recorder/recorder.hpp"
#include "memtrail/snapshot/msgpack_format.hpp"
#include "memtrail/snapshot/torch_pickle.hpp"
#include "sanitizer_skips.hpp"

namespace {

using namespace memtrail;
using snapshot::action;

constexpr uint64_t MiB = 1ull << 20;

recorder::history_options all_with_entries(size_t max_entries) {
    recorder::history_options options;
    options.max_entries = max_entries;
    return options;
}

TEST(ring, keeps_the_newest_entries_and_counts_the_dropped) {
    simulated_device gpu;
    caching_allocator allocator({&gpu});
    recorder::recorder history(allocator);
    history.record_memory_history(all_with_entries(10));
    std::vector<device_address> addresses;
    for (int i = 0; i < 20; ++i) {
        addresses.push_back(history.allocate(MiB + static_cast<uint64_t>(i) * 4096, 0));
    }
    // Recorded: every segment allocation, 20 allocations and the snapshot's own entry.
    const auto s = history.take_snapshot();
    const auto& trace = *s.find_trace(0);
    ASSERT_EQ(trace.entries.size(), 10u);
    const auto stats = s.stats.at(0);
    const auto recorded = static_cast<uint64_t>(stats.at("allocation.all.allocated") +
                                                stats.at("segment.all.allocated") + 1);
    EXPECT_EQ(trace.dropped, recorded - 10);
    EXPECT_EQ(trace.entries.back().kind, action::snapshot);
    EXPECT_EQ(trace.entries[trace.entries.size() - 2].address, addresses.back());
}

TEST(ring, shrinking_drops_the_oldest) {
    simulated_device gpu;
    caching_allocator allocator({&gpu});
    recorder::recorder history(allocator);
    history.record_memory_history(all_with_entries(100));
    for (int i = 0; i < 5; ++i) {
        history.free(history.allocate(MiB, 0));  // 1 segment_alloc, then 3 entries per pair
    }
    history.record_memory_history(all_with_entries(4));
    const auto s = history.take_snapshot();
    const auto& trace = *s.find_trace(0);
    ASSERT_EQ(trace.entries.size(), 4u);
    EXPECT_EQ(trace.dropped, 16u + 1u - 4u);  // 16 recorded, 3 dropped by shrinking, then the
                                              // snapshot entry pushes one more out
    EXPECT_EQ(trace.entries.back().kind, action::snapshot);
}

TEST(ring, wraps_across_its_storage_chunks_in_order) {
    // The ring stores entries in chunks of a huge page, 37,449 of 56 bytes: fill it past
    // several chunk boundaries and wrap around, then check the count, the dropped entries and
    // the order.
    constexpr size_t capacity = 2 * 37'449 + 5'000;
    simulated_device gpu;
    caching_allocator allocator({&gpu});
    recorder::recorder history(allocator);
    recorder::history_options options = all_with_entries(capacity);
    options.context = recorder::context_mode::none;
    history.record_memory_history(options);
    constexpr int pairs = capacity / 2;  // 3 entries each (alloc, free_requested, free_completed)
    for (int i = 0; i < pairs; ++i) {
        history.free(history.allocate(512 * static_cast<uint64_t>(1 + i % 7), 0));
    }
    const auto s = history.take_snapshot();
    const auto& trace = *s.find_trace(0);
    ASSERT_EQ(trace.entries.size(), capacity);
    EXPECT_EQ(trace.dropped, 3u * pairs + 1 + 1 - capacity);  // + the segment and the snapshot
    EXPECT_EQ(trace.entries.back().kind, action::snapshot);
    // Oldest first: after the snapshot entry's predecessor, the pattern of the last pairs.
    const size_t last_pair = trace.entries.size() - 4;
    EXPECT_EQ(trace.entries[last_pair].kind, action::alloc);
    EXPECT_EQ(trace.entries[last_pair].size, 512u * (1 + (pairs - 1) % 7));
    for (size_t i = 1; i < trace.entries.size(); ++i) {
        ASSERT_LE(trace.entries[i - 1].time_ns, trace.entries[i].time_ns) << i;
    }
    for (size_t i = last_pair; i >= 3 && i > trace.entries.size() - capacity + 3; i -= 3) {
        ASSERT_EQ(trace.entries[i].kind, action::alloc) << i;
        ASSERT_EQ(trace.entries[i + 1].kind, action::free_requested) << i;
        ASSERT_EQ(trace.entries[i + 2].kind, action::free_completed) << i;
    }
}

TEST(stacks, two_recorders_on_one_thread_keep_their_own_ids) {
    // Each thread caches recently interned stacks; the cache must not hand one table's id to
    // another table.
    simulated_device gpu_a, gpu_b;
    caching_allocator allocator_a({&gpu_a}), allocator_b({&gpu_b});
    recorder::recorder history_a(allocator_a), history_b(allocator_b);
    history_a.record_memory_history(all_with_entries(100));
    history_b.record_memory_history(all_with_entries(100));
    const device_address a = history_a.allocate(MiB, 0);
    const device_address b = history_b.allocate(MiB, 0);
    const auto sa = history_a.take_snapshot();
    const auto sb = history_b.take_snapshot();
    const auto& ea = sa.find_trace(0)->entries;
    const auto& eb = sb.find_trace(0)->entries;
    auto first_alloc_stack = [](const auto& entries) {
        for (const auto& e : entries) {
            if (e.kind == action::alloc) {
                return e.stack;
            }
        }
        return snapshot::stack_id{0};
    };
    const auto stack_a = first_alloc_stack(ea), stack_b = first_alloc_stack(eb);
    ASSERT_NE(stack_a, 0u);
    ASSERT_NE(stack_b, 0u);
    EXPECT_EQ(sa.stack_at(stack_a).size(), sb.stack_at(stack_b).size());
    history_a.free(a);
    history_b.free(b);
}

class eight_threads : public ::testing::TestWithParam<recorder::unwinder> {};

TEST_P(eight_threads, lose_and_duplicate_nothing) {
    MEMTRAIL_SKIP_LIBUNWIND_THREADS_UNDER_TSAN(GetParam());
    // Room for every thread's live blocks at once: each ends with about 11 GiB live, and threads
    // that keep pace (as under ThreadSanitizer) would otherwise run out of 80 GiB.
    simulated_device_options room;
    room.capacity = 256ull << 30;
    simulated_device gpu(room);
    caching_allocator allocator({&gpu});
    recorder::recorder history(allocator);
    auto options = all_with_entries(10'000'000);
    options.stack_unwinder = GetParam();
    history.record_memory_history(options);

    constexpr int thread_count = 8;
    constexpr int rounds = 4000;
    std::vector<std::thread> threads;
    for (int t = 0; t < thread_count; ++t) {
        threads.emplace_back([&history, t] {
            std::mt19937_64 random(static_cast<uint64_t>(t));
            std::vector<device_address> live;
            for (int i = 0; i < rounds; ++i) {
                if (live.empty() || random() % 3 != 0) {
                    // Sizes over both pools: small blocks, large blocks, oversize-ish ones.
                    const uint64_t size = 512 + random() % (random() % 4 == 0 ? 64 * MiB : MiB);
                    live.push_back(history.allocate(size, 0));
                } else {
                    const size_t which = random() % live.size();
                    history.free(live[which]);
                    live[which] = live.back();
                    live.pop_back();
                }
                if (i % 1000 == 0) {
                    history.marker("round");
                }
            }
            for (const device_address address : live) {
                history.free(address);
            }
        });
    }
    for (auto& thread : threads) {
        thread.join();
    }

    const auto s = history.take_snapshot();
    const auto& trace = *s.find_trace(0);
    EXPECT_EQ(trace.dropped, 0u);
    std::map<action, int64_t> counts;
    std::set<uint32_t> thread_numbers;
    std::set<uint64_t> live;
    for (const auto& entry : trace.entries) {
        ++counts[entry.kind];
        if (entry.kind == action::alloc) {
            thread_numbers.insert(entry.thread);
            // An address is handed out again only after it was freed.
            EXPECT_TRUE(live.insert(entry.address).second) << std::hex << entry.address;
        } else if (entry.kind == action::free_requested) {
            EXPECT_EQ(live.erase(entry.address), 1u) << std::hex << entry.address;
        }
    }
    EXPECT_TRUE(live.empty());
    EXPECT_EQ(thread_numbers.size(), static_cast<size_t>(thread_count));

    const auto& stats = s.stats.at(0);
    EXPECT_EQ(counts[action::alloc], stats.at("allocation.all.allocated"));
    EXPECT_EQ(counts[action::free_requested], stats.at("allocation.all.freed"));
    EXPECT_EQ(counts[action::free_completed], stats.at("allocation.all.freed"));
    EXPECT_EQ(counts[action::segment_alloc], stats.at("segment.all.allocated"));
    EXPECT_EQ(counts[action::segment_free], stats.at("segment.all.freed"));
    EXPECT_EQ(counts[action::annotation_marker], thread_count * rounds / 1000);
    EXPECT_EQ(stats.at("allocation.all.current"), 0);
}

INSTANTIATE_TEST_SUITE_P(unwinders, eight_threads,
                         ::testing::Values(recorder::unwinder::libunwind,
                                           recorder::unwinder::frame_pointer,
                                           recorder::unwinder::eh_frame),
                         [](const ::testing::TestParamInfo<recorder::unwinder>& parameter) {
                             return std::string(recorder::unwinder_name(parameter.param));
                         });

class round_trip : public ::testing::Test {
  protected:
    simulated_device gpu;
    caching_allocator allocator{{&gpu}};
    recorder::recorder history{allocator};
    std::filesystem::path folder = std::filesystem::path(::testing::TempDir()) / "memtrail_rt";

    void SetUp() override {
        std::filesystem::create_directories(folder);
        history.record_memory_history({});
        recorder::recorder::set_thread_metadata("epoch 1");
        history.range_start("train");
        const auto a = history.allocate(3 * MiB, 0);
        history.allocate(100, 0);
        history.free(a);
        history.range_end("train");
        recorder::recorder::set_thread_metadata("");
    }
};

TEST_F(round_trip, memtrail_format_keeps_everything) {
    const snapshot::snapshot taken = history.take_snapshot();
    EXPECT_EQ(snapshot::read_snapshot(snapshot::write_snapshot(taken)), taken);

    const auto path = folder / "history.memtrail.zst";
    history.dump_snapshot(path);
    const snapshot::snapshot read = snapshot::read_snapshot(path);
    EXPECT_EQ(read.segments, taken.segments);
    EXPECT_EQ(read.frames(), taken.frames());
    EXPECT_EQ(read.find_trace(0)->entries.size(), taken.find_trace(0)->entries.size() + 1);
}

TEST_F(round_trip, pytorch_pickle_keeps_the_trace_and_frames) {
    const auto path = folder / "history.pickle";
    history.dump_snapshot(path);
    const snapshot::snapshot read = snapshot::read_torch_pickle(path);
    const auto& entries = read.find_trace(0)->entries;
    ASSERT_FALSE(entries.empty());
    size_t allocs = 0;
    for (const auto& entry : entries) {
        if (entry.kind == action::alloc) {
            ++allocs;
            ASSERT_NE(entry.stack, snapshot::no_id);
            const auto& top = read.frame_at(read.stack_at(entry.stack).front());
            EXPECT_NE(read.string_at(top.function).find("round_trip"), std::string::npos)
                << read.string_at(top.function);
        }
    }
    EXPECT_EQ(allocs, 2u);
    EXPECT_EQ(read.segments.size(), 2u);
}

}  // namespace

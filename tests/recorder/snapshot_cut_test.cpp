// A snapshot is one cut through the history: taken while other threads allocate, its trace ends
// where its segments were copied, so replaying the trace to the end gives exactly its segments.

#include <gtest/gtest.h>

#include <atomic>
#include <memory>
#include <random>
#include <thread>
#include <vector>

#include "memtrail/analysis/device_model.hpp"
#include "memtrail/core/simulated_device.hpp"
#include "memtrail/recorder/recorder.hpp"

namespace {

using namespace memtrail;

constexpr uint64_t MiB = 1ull << 20;

void allocate_and_free_until(recorder::recorder& history, const std::atomic<bool>& stop,
                             uint64_t seed) {
    std::mt19937_64 random(seed);
    std::vector<device_address> live;
    while (!stop.load(std::memory_order_relaxed)) {
        if (live.size() < 8 && (live.empty() || random() % 3 != 0)) {
            // Small and large blocks, some large enough for a segment of their own.
            const uint64_t size = 512 + random() % (random() % 4 == 0 ? 24 * MiB : MiB);
            live.push_back(history.allocate(size, 0));
        } else {
            const size_t which = random() % live.size();
            history.free(live[which]);
            live[which] = live.back();
            live.pop_back();
        }
        if (random() % 64 == 0) {
            // Segments come and go, not only blocks.
            history.empty_cache(0);
        }
    }
    for (const device_address address : live) {
        history.free(address);
    }
}

TEST(snapshot_cut, dumps_taken_while_sixteen_threads_record_agree_with_themselves) {
    simulated_device gpu;
    caching_allocator allocator({&gpu});
    recorder::recorder history(allocator);
    recorder::history_options options;
    options.max_entries = 200'000;  // wraps while dumps are taken
    options.context = recorder::context_mode::none;
    options.stack_unwinder = recorder::unwinder::frame_pointer;
    history.record_memory_history(options);

    constexpr int thread_count = 16;
    constexpr int dump_count = 50;
    std::atomic<bool> stop{false};
    std::vector<std::thread> threads;
    for (int t = 0; t < thread_count; ++t) {
        threads.emplace_back(
            [&history, &stop, t] { allocate_and_free_until(history, stop, uint64_t(t)); });
    }
    std::vector<std::shared_ptr<const snapshot::snapshot>> dumps;
    std::thread dumper([&] {
        for (int i = 0; i < dump_count; ++i) {
            dumps.push_back(std::make_shared<const snapshot::snapshot>(history.take_snapshot()));
        }
        stop.store(true);
    });
    dumper.join();
    for (auto& thread : threads) {
        thread.join();
    }

    ASSERT_EQ(dumps.size(), static_cast<size_t>(dump_count));
    int inconsistent = 0;
    int with_entries = 0;
    for (size_t i = 0; i < dumps.size(); ++i) {
        const snapshot::device_trace* trace = dumps[i]->find_trace(0);
        ASSERT_NE(trace, nullptr) << "dump " << i;
        // The trace ends with the dump's own mark: nothing recorded after the cut is in it.
        // (A dumper held up long enough for the ring to wrap past the cut finds it all dropped.)
        if (!trace->entries.empty()) {
            ++with_entries;
            EXPECT_EQ(trace->entries.back().kind, snapshot::action::snapshot) << "dump " << i;
        }
        const analysis::device_model model = analysis::device_model::build(dumps[i], 0);
        if (!model.report().matches_final_segments) {
            ++inconsistent;
            ADD_FAILURE() << "dump " << i << " of " << trace->entries.size()
                          << " entries: replaying to the end differs from the snapshot: "
                          << model.report().first_difference;
        }
    }
    EXPECT_EQ(inconsistent, 0);
    EXPECT_GT(with_entries, dump_count / 2);
}

}  // namespace

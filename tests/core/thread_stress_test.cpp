// Many threads allocating, recording streams and freeing at once; the allocator must stay
// consistent and count every operation exactly once.

#include <gtest/gtest.h>

#include <random>
#include <thread>

#include "memtrail/core/caching_allocator.hpp"
#include "memtrail/core/simulated_device.hpp"

namespace memtrail {
namespace {

class counting_observer : public allocator_observer {
  public:
    void on_event(const allocator_event& e) override { ++counts[static_cast<size_t>(e.action)]; }
    uint64_t counts[9] = {};  // only touched under the allocator's lock
};

TEST(ThreadStress, EightThreadsLoseAndDuplicateNothing) {
    simulated_device dev;
    device_allocator a(dev);
    counting_observer observer;
    a.set_observer(&observer);
    constexpr int threads = 8;
    constexpr int operations = 20000;
    std::vector<std::thread> workers;
    for (int t = 0; t < threads; ++t) {
        workers.emplace_back([&, t] {
            std::mt19937_64 rng(static_cast<uint64_t>(t) + 1);
            std::vector<device_address> mine;
            for (int i = 0; i < operations; ++i) {
                if (mine.empty() || rng() % 2) {
                    const uint64_t size = 1ull << (rng() % 26);
                    mine.push_back(a.allocate(size, static_cast<stream_handle>(t % 3)));
                    if (rng() % 16 == 0) {
                        a.record_stream(mine.back(), 100 + static_cast<stream_handle>(t));
                    }
                } else {
                    const size_t k = rng() % mine.size();
                    a.free(mine[k]);
                    mine[k] = mine.back();
                    mine.pop_back();
                }
            }
            for (device_address x : mine) {
                a.free(x);
            }
        });
    }
    for (auto& w : workers) {
        w.join();
    }
    a.process_events();
    EXPECT_EQ(a.check_consistency(), "");
    const auto stats = a.memory_stats();
    EXPECT_EQ(stats.at("allocation.all.current"), 0);
    EXPECT_EQ(stats.at("active.all.current"), 0);
    const auto allocs =
        static_cast<int64_t>(observer.counts[static_cast<size_t>(allocator_action::alloc)]);
    EXPECT_EQ(allocs, stats.at("allocation.all.allocated"));
    EXPECT_EQ(static_cast<int64_t>(
                  observer.counts[static_cast<size_t>(allocator_action::free_requested)]),
              allocs);
    EXPECT_EQ(static_cast<int64_t>(
                  observer.counts[static_cast<size_t>(allocator_action::free_completed)]),
              allocs);
    EXPECT_EQ(
        static_cast<int64_t>(observer.counts[static_cast<size_t>(allocator_action::segment_alloc)]),
        stats.at("num_device_alloc"));
    a.set_observer(nullptr);
}

}  // namespace
}  // namespace memtrail

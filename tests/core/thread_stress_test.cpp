// Many threads allocating, recording streams and freeing at once; the allocator must stay
// consistent and count every operation exactly once.

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <map>
#include <mutex>
#include <random>
#include <set>
#include <string>
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

// Takes snapshots on a thread of its own: each holds the device lock for a walk over every block
// (this many, for long enough that the other threads queue behind it even on a machine of few
// cores), so that the next holder has operations of others to make (combining_lock.hpp).
class lock_holder {
  public:
    static constexpr int ballast_blocks = 20000;
    explicit lock_holder(device_allocator& a) : a_(a) {
        for (int i = 0; i < ballast_blocks; ++i) {
            ballast_.push_back(a_.allocate(512, 99));
        }
        thread_ = std::thread([this] {
            while (!finished_.load()) {
                EXPECT_FALSE(a_.snapshot(false).empty());
                ++snapshots_;
                // A gap between snapshots, so that the waiters get the lock too.
                std::this_thread::sleep_for(std::chrono::microseconds(100));
            }
        });
        while (snapshots_.load() == 0) {
            std::this_thread::yield();
        }
    }
    void stop() {
        finished_ = true;
        thread_.join();
        for (device_address x : ballast_) {
            a_.free(x);
        }
    }

  private:
    device_allocator& a_;
    std::vector<device_address> ballast_;
    std::atomic<bool> finished_{false};
    std::atomic<int> snapshots_{0};
    std::thread thread_;
};

// With the combining device lock (the default) and without an observer, allocations served from the
// cache and frees of blocks used on one stream may be made by the lock's holder for the waiting
// threads (combining_lock.hpp); the rest, which this mix has too (new segments, cross-stream frees,
// out of memory), each thread makes itself.
TEST(ThreadStress, EightThreadsOfPairsAndMixesWithoutObserverStayConsistent) {
    simulated_device_options options;
    options.capacity = 256ull << 20;  // small enough that some allocations run out of memory
    simulated_device dev(options);
    device_allocator a(dev);
    std::mutex live_mutex;
    std::set<device_address> live;  // handed out and not yet freed, over all threads
    bool duplicated = false;
    std::atomic<int64_t> allocations{0};
    std::atomic<int64_t> out_of_memory{0};
    lock_holder holder(a);
    constexpr int threads = 8;
    constexpr int operations = 20000;
    std::vector<std::thread> workers;
    for (int t = 0; t < threads; ++t) {
        workers.emplace_back([&, t] {
            std::mt19937_64 rng(static_cast<uint64_t>(t) + 1);
            std::vector<device_address> mine;
            auto take = [&](device_address x) {
                std::lock_guard<std::mutex> lock(live_mutex);
                duplicated |= !live.insert(x).second;
            };
            auto give_back = [&](device_address x) {
                {
                    std::lock_guard<std::mutex> lock(live_mutex);
                    live.erase(x);
                }
                a.free(x);
            };
            for (int i = 0; i < operations; ++i) {
                if (t % 2 == 0) {  // the benchmark's pair
                    device_address x = 0;
                    try {
                        x = a.allocate(512, static_cast<stream_handle>(t));
                    } catch (const out_of_memory_error&) {
                        ++out_of_memory;
                        continue;
                    }
                    take(x);
                    give_back(x);
                    ++allocations;
                } else if (mine.empty() || rng() % 2) {
                    const uint64_t size = 1ull << (rng() % 25);
                    try {
                        mine.push_back(a.allocate(size, static_cast<stream_handle>(t % 3)));
                    } catch (const out_of_memory_error&) {
                        ++out_of_memory;
                        continue;
                    }
                    take(mine.back());
                    ++allocations;
                    if (rng() % 16 == 0) {
                        a.record_stream(mine.back(), 100 + static_cast<stream_handle>(t));
                    }
                } else {
                    const size_t k = rng() % mine.size();
                    give_back(mine[k]);
                    mine[k] = mine.back();
                    mine.pop_back();
                }
            }
            for (device_address x : mine) {
                give_back(x);
            }
        });
    }
    for (auto& w : workers) {
        w.join();
    }
    holder.stop();
    EXPECT_FALSE(duplicated);
    a.process_events();
    EXPECT_EQ(a.check_consistency(), "");
    const auto stats = a.memory_stats();
    EXPECT_EQ(stats.at("allocation.all.current"), 0);
    EXPECT_EQ(stats.at("active.all.current"), 0);
    EXPECT_EQ(stats.at("allocated_bytes.all.current"), 0);
    EXPECT_EQ(stats.at("requested_bytes.all.current"), 0);
    EXPECT_EQ(stats.at("allocation.all.allocated"),
              allocations.load() + lock_holder::ballast_blocks);
    EXPECT_EQ(stats.at("allocation.all.freed"), allocations.load() + lock_holder::ballast_blocks);
    EXPECT_EQ(stats.at("num_ooms"), out_of_memory.load());
}

// An observer's events name the thread that made the call (the recorder's trace does): with one
// set, every thread's allocations and frees reach it from that thread, in that thread's order.
class thread_logging_observer : public allocator_observer {
  public:
    struct entry {
        std::thread::id thread;
        allocator_action action;
        device_address address;
    };
    void on_event(const allocator_event& e) override {
        log.push_back({std::this_thread::get_id(), e.action, e.address});
    }
    std::vector<entry> log;  // only touched under the allocator's lock
};

// One that names the calling thread (allocator_observer::caller): the lock's holder may then make
// waiting threads' allocations and frees, whose events carry the word of the thread that asked.
class caller_naming_observer final : public thread_logging_observer {
  public:
    uint64_t caller() const override {
        std::lock_guard<std::mutex> lock(mutex_);
        const auto [it, added] = words_.try_emplace(std::this_thread::get_id(), words_.size() + 1);
        threads_.try_emplace(it->second, it->first);
        return it->second;
    }
    void on_event(const allocator_event& e) override {
        std::thread::id thread = std::this_thread::get_id();
        if (e.caller != 0) {
            std::lock_guard<std::mutex> lock(mutex_);
            thread = threads_.at(e.caller);
        }
        log.push_back({thread, e.action, e.address});
    }

  private:
    mutable std::mutex mutex_;
    mutable std::map<std::thread::id, uint64_t> words_;
    mutable std::map<uint64_t, std::thread::id> threads_;
};

void expect_each_threads_events_in_its_order(thread_logging_observer& observer) {
    simulated_device dev;
    device_allocator a(dev);
    a.set_observer(&observer);
    lock_holder holder(a);
    constexpr int threads = 8;
    constexpr int pairs = 2000;
    std::vector<std::thread::id> ids(threads);
    std::vector<std::vector<device_address>> handed_out(threads);
    std::vector<std::thread> workers;
    for (int t = 0; t < threads; ++t) {
        workers.emplace_back([&, t] {
            ids[static_cast<size_t>(t)] = std::this_thread::get_id();
            for (int i = 0; i < pairs; ++i) {
                const device_address x = a.allocate(512 * static_cast<uint64_t>(1 + i % 3),
                                                    static_cast<stream_handle>(t));
                handed_out[static_cast<size_t>(t)].push_back(x);
                a.free(x);
            }
        });
    }
    for (auto& w : workers) {
        w.join();
    }
    holder.stop();
    a.set_observer(nullptr);
    for (int t = 0; t < threads; ++t) {
        std::vector<device_address> allocs, frees;
        for (const auto& e : observer.log) {
            if (e.thread != ids[static_cast<size_t>(t)]) {
                continue;
            }
            if (e.action == allocator_action::alloc) {
                allocs.push_back(e.address);
            } else if (e.action == allocator_action::free_requested) {
                frees.push_back(e.address);
            }
        }
        EXPECT_EQ(allocs, handed_out[static_cast<size_t>(t)]) << "thread " << t;
        EXPECT_EQ(frees, handed_out[static_cast<size_t>(t)]) << "thread " << t;
    }
}

TEST(ThreadStress, AnObserverSeesEachThreadsEventsOnThatThread) {
    thread_logging_observer observer;
    expect_each_threads_events_in_its_order(observer);
}

TEST(ThreadStress, AnObserverThatNamesCallersSeesEachThreadsEventsNamed) {
    caller_naming_observer observer;
    expect_each_threads_events_in_its_order(observer);
}

}  // namespace
}  // namespace memtrail

// The failure path in PyTorch's order: free-memory callbacks, garbage collection, the device
// allocation, release of cached oversize blocks, release of the whole cache and one retry, OOM.

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>

#include "event_log.hpp"
#include "memtrail/core/caching_allocator.hpp"
#include "memtrail/core/simulated_device.hpp"

namespace memtrail {
namespace {

using testing::event_log;
constexpr uint64_t MiB = 1ull << 20;
constexpr uint64_t GiB = 1ull << 30;

simulated_device_options gib_device() {
    simulated_device_options o;
    o.capacity = GiB;
    return o;
}

int64_t stat_of(const device_allocator& a, const std::string& name) {
    return a.memory_stats().at(name);
}

TEST(FailurePath, OversizeCachedBlocksAreReleasedBeforeTheWholeCache) {
    simulated_device dev(gib_device());
    device_allocator a(dev, allocator_config::parse("max_split_size_mb:64"));
    const device_address x = a.allocate(300 * MiB);
    const device_address y = a.allocate(400 * MiB);
    a.free(x);
    a.free(y);
    // 350 MiB: the 400 MiB block is 50 MiB too big to reuse, and 700 + 350 > 1 GiB. Releasing
    // that one oversize block is enough; no retry is counted.
    const device_address z = a.allocate(350 * MiB);
    EXPECT_EQ(stat_of(a, "num_alloc_retries"), 0);
    EXPECT_EQ(stat_of(a, "num_device_free"), 1);
    EXPECT_EQ(stat_of(a, "reserved_bytes.all.current"), int64_t(650 * MiB));
    EXPECT_EQ(a.check_consistency(), "");
    a.free(z);
}

TEST(FailurePath, ReleasingSeveralOversizeBlocksLargestFirst) {
    simulated_device dev(gib_device());
    device_allocator a(dev, allocator_config::parse("max_split_size_mb:64"));
    event_log log;
    a.set_observer(&log);
    const device_address x = a.allocate(200 * MiB);
    const device_address y = a.allocate(300 * MiB);
    const device_address w = a.allocate(100 * MiB);
    a.free(x);
    a.free(y);
    // 600 MiB: no cached block is large enough; 300 then 200 are released (500 < 600, so the
    // step reports failure) and the full release with a retry follows.
    const device_address z = a.allocate(600 * MiB);
    std::vector<device_address> freed;
    for (const auto& e : log.events) {
        if (e.action == allocator_action::segment_free) {
            freed.push_back(e.address);
        }
    }
    EXPECT_EQ(freed, (std::vector<device_address>{y, x}));
    EXPECT_EQ(stat_of(a, "num_alloc_retries"), 1);
    a.free(z);
    a.free(w);
    a.set_observer(nullptr);
}

TEST(FailurePath, GarbageCollectionReleasesOldCachedBlocksAboveTheThreshold) {
    simulated_device dev(gib_device());
    device_allocator a(dev, allocator_config::parse("garbage_collection_threshold:0.3"));
    a.set_memory_fraction(1.0);
    const device_address x = a.allocate(300 * MiB);
    const device_address y = a.allocate(200 * MiB);
    a.free(x);
    a.free(y);
    // No cached block fits 400 MiB and 500 MiB held is above 0.3 GiB: both cached blocks are as
    // old as the average and are released before the device is asked.
    const device_address z = a.allocate(400 * MiB);
    EXPECT_EQ(stat_of(a, "num_device_free"), 2);
    EXPECT_EQ(stat_of(a, "num_alloc_retries"), 0);
    EXPECT_EQ(stat_of(a, "reserved_bytes.all.current"), int64_t(400 * MiB));
    a.free(z);
}

TEST(FailurePath, GarbageCollectionNeedsAMemoryFraction) {
    simulated_device dev(gib_device());
    device_allocator a(dev, allocator_config::parse("garbage_collection_threshold:0.3"));
    const device_address x = a.allocate(300 * MiB);
    a.free(x);
    const device_address z = a.allocate(400 * MiB);
    EXPECT_EQ(stat_of(a, "num_device_free"), 0);
    a.free(z);
}

TEST(FailurePath, InjectedDeviceFailureIsRetriedAfterFreeingTheCache) {
    simulated_device dev(gib_device());
    device_allocator a(dev);
    const device_address x = a.allocate(10 * MiB);
    a.free(x);
    dev.fail_nth_allocation(1);
    const device_address y = a.allocate(30 * MiB);
    EXPECT_EQ(stat_of(a, "num_alloc_retries"), 1);
    EXPECT_EQ(stat_of(a, "num_device_free"), 1);
    EXPECT_EQ(dev.calls().failed_allocations, 1u);
    a.free(y);
}

TEST(FailurePath, OutOfMemoryReportsLikePyTorchAndCallsObserversOutsideTheLock) {
    simulated_device dev(gib_device());
    device_allocator a(dev);
    event_log log;
    a.set_observer(&log);
    const device_address x = a.allocate(600 * MiB);
    std::atomic<bool> other_thread_got_lock{false};
    uint64_t seen_free = 0, seen_total = 0;
    a.add_oom_observer([&](int device, uint64_t size, uint64_t total, uint64_t free) {
        EXPECT_EQ(device, 0);
        EXPECT_EQ(size, 500 * MiB);
        seen_total = total;
        seen_free = free;
        // Another thread must be able to use the allocator while observers run.
        std::thread t([&] {
            a.stats();
            other_thread_got_lock = true;
        });
        for (int i = 0; i < 200 && !other_thread_got_lock; ++i) {
            std::this_thread::sleep_for(std::chrono::milliseconds(5));
        }
        t.detach();
    });
    try {
        a.allocate(500 * MiB);
        FAIL() << "expected out of memory";
    } catch (const out_of_memory_error& e) {
        const std::string m = e.what();
        EXPECT_NE(m.find("Tried to allocate 500.00 MiB"), std::string::npos) << m;
        EXPECT_NE(m.find("total capacity of 1024.00 MiB of which 424.00 MiB is free"),
                  std::string::npos)
            << m;
        EXPECT_NE(m.find("600.00 MiB is allocated by memtrail"), std::string::npos) << m;
        EXPECT_EQ(e.device_free, 424 * MiB);
        EXPECT_EQ(e.requested, 500 * MiB);
    }
    EXPECT_TRUE(other_thread_got_lock);
    EXPECT_EQ(seen_total, GiB);
    EXPECT_EQ(seen_free, 424 * MiB);
    ASSERT_EQ(log.events.back().action, allocator_action::oom);
    EXPECT_EQ(log.events.back().address, 424 * MiB);  // PyTorch stores the free bytes there
    EXPECT_EQ(log.events.back().size, 500 * MiB);
    EXPECT_EQ(stat_of(a, "num_ooms"), 1);
    EXPECT_EQ(stat_of(a, "num_alloc_retries"), 1);
    EXPECT_EQ(a.check_consistency(), "");
    a.free(x);
    a.set_observer(nullptr);
}

TEST(FailurePath, FreeMemoryCallbacksRunBeforeTheDeviceIsAskedWithAPressureLevel) {
    simulated_device dev(gib_device());
    device_allocator a(dev);
    std::vector<device_address> held;
    std::vector<memory_pressure> pressures;
    // The callback plays a garbage-collected runtime: it frees what it holds when asked.
    a.add_free_memory_callback([&](int, memory_pressure p) {
        pressures.push_back(p);
        const bool freed = !held.empty();
        for (device_address h : held) {
            a.free(h);
        }
        held.clear();
        return freed;
    });
    // Below 20% of the device reserved, callbacks are not worth running.
    held.push_back(a.allocate(150 * MiB));
    a.allocate(150 * MiB);
    EXPECT_TRUE(pressures.empty());
    // Reserved 300 MiB (> 20%), allocated/reserved = 100% >= 80%: full collection.
    const uint64_t reserved_before = dev.used_bytes();
    const device_address reused = a.allocate(150 * MiB);
    ASSERT_EQ(pressures.size(), 1u);
    EXPECT_EQ(pressures[0], memory_pressure::full);
    EXPECT_EQ(dev.used_bytes(), reserved_before);  // satisfied from the freed block
    EXPECT_EQ(a.allocated_size(reused), 150 * MiB);
}

TEST(FailurePath, LightPressureWhenMostReservedMemoryIsFree) {
    simulated_device dev(gib_device());
    device_allocator a(dev);
    const device_address x = a.allocate(300 * MiB);
    a.free(x);
    std::vector<memory_pressure> pressures;
    a.add_free_memory_callback([&](int, memory_pressure p) {
        pressures.push_back(p);
        return false;
    });
    a.allocate(400 * MiB);
    ASSERT_EQ(pressures.size(), 1u);
    EXPECT_EQ(pressures[0], memory_pressure::light);
}

TEST(FailurePath, FreeMemoryCallbacksRunWithoutTheDevicesLock) {
    simulated_device dev(gib_device());
    device_allocator a(dev);
    device_address held = a.allocate(300 * MiB);
    // A runtime whose collector waits for another thread that frees (Python: a thread that
    // holds the GIL and frees a tensor): with the device's lock held, that thread would wait
    // for ever.
    std::atomic<bool> freed_elsewhere{false};
    a.add_free_memory_callback([&](int, memory_pressure) {
        if (held == 0) {
            return false;
        }
        std::thread other([&] {
            a.free(held);
            freed_elsewhere = true;
        });
        const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
        while (!freed_elsewhere && std::chrono::steady_clock::now() < deadline) {
            std::this_thread::sleep_for(std::chrono::milliseconds(1));
        }
        if (!freed_elsewhere) {
            other.detach();  // still waiting for the lock: the test fails below
            return false;
        }
        other.join();
        held = 0;
        return true;
    });
    const device_address reused = a.allocate(300 * MiB);
    EXPECT_TRUE(freed_elsewhere);
    EXPECT_EQ(dev.used_bytes(), 300 * MiB);  // the freed block, not a new segment
    a.free(reused);
    EXPECT_EQ(a.check_consistency(), "");
}

}  // namespace
}  // namespace memtrail

// One allocator per real GPU: memory lands on the device asked for, each device's pools and
// statistics stay its own, and a free on the wrong device is refused without changing anything.
// Needs two CUDA devices (an nvidia-h200-x2 host, say); skips elsewhere.

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "memtrail/core/caching_allocator.hpp"
#include "test_devices.hpp"

#ifdef MEMTRAIL_HAVE_CUDA

namespace memtrail {
namespace {

using testing::GiB;
using testing::MiB;

class TwoGpus : public ::testing::Test {
  protected:
    void SetUp() override {
        if (cuda_device::count() < 2) {
            GTEST_SKIP() << "needs two CUDA devices; " << cuda_device::count() << " visible";
        }
        gpu0 = std::make_unique<cuda_device>(0);
        gpu1 = std::make_unique<cuda_device>(1);
    }

    // Bytes the driver reports in use on `d` beyond what it reported at `baseline`.
    static int64_t used_since(device& d, const memory_info& baseline) {
        return static_cast<int64_t>(baseline.free) - static_cast<int64_t>(d.get_memory_info().free);
    }

    std::unique_ptr<cuda_device> gpu0;
    std::unique_ptr<cuda_device> gpu1;
};

TEST_F(TwoGpus, MemoryLandsOnTheDeviceAsked) {
    caching_allocator allocator({gpu0.get(), gpu1.get()});
    const memory_info before0 = gpu0->get_memory_info();
    const memory_info before1 = gpu1->get_memory_info();

    const device_address big = allocator.allocate(GiB, 1);
    EXPECT_GE(used_since(*gpu1, before1), static_cast<int64_t>(GiB));
    EXPECT_LT(used_since(*gpu0, before0), static_cast<int64_t>(512 * MiB));
    EXPECT_EQ(allocator.device_of(big), 1);
    EXPECT_EQ(allocator.on(1).memory_stats().at("reserved_bytes.all.current"),
              static_cast<int64_t>(GiB));
    EXPECT_EQ(allocator.on(0).memory_stats().at("reserved_bytes.all.current"), 0);

    allocator.free(big, 1);
    allocator.empty_cache();
    EXPECT_LT(used_since(*gpu1, before1), static_cast<int64_t>(512 * MiB));
}

TEST_F(TwoGpus, WrongDeviceFreeIsRefusedAndChangesNothing) {
    caching_allocator allocator({gpu0.get(), gpu1.get()});
    const device_address on0 = allocator.allocate(3 * MiB, 0);
    const device_address on1 = allocator.allocate(3 * MiB, 1);
    const auto stats0 = allocator.on(0).memory_stats();
    const auto stats1 = allocator.on(1).memory_stats();
    try {
        allocator.free(on1, 0);
        FAIL() << "a free on the wrong device was accepted";
    } catch (const usage_error& e) {
        const std::string message = e.what();
        EXPECT_NE(message.find("on device 0, but it was allocated on device 1"), std::string::npos)
            << message;
    }
    EXPECT_EQ(allocator.on(0).memory_stats(), stats0);
    EXPECT_EQ(allocator.on(1).memory_stats(), stats1);
    EXPECT_EQ(allocator.on(0).check_consistency(), "");
    EXPECT_EQ(allocator.on(1).check_consistency(), "");
    allocator.free(on1, 1);
    allocator.free(on0, 0);
    EXPECT_EQ(allocator.on(0).memory_stats().at("allocated_bytes.all.current"), 0);
    EXPECT_EQ(allocator.on(1).memory_stats().at("allocated_bytes.all.current"), 0);
}

TEST_F(TwoGpus, ExpandableSegmentsMapOnTheirOwnDevice) {
    caching_allocator allocator({gpu0.get(), gpu1.get()},
                                allocator_config::parse("expandable_segments:True"));
    const memory_info before1 = gpu1->get_memory_info();
    std::vector<device_address> blocks;
    for (int i = 0; i < 8; ++i) {
        blocks.push_back(allocator.allocate(100 * MiB, 1));
    }
    EXPECT_GE(used_since(*gpu1, before1), static_cast<int64_t>(800 * MiB));
    EXPECT_GE(allocator.on(1).memory_stats().at("reserved_bytes.all.current"),
              static_cast<int64_t>(800 * MiB));
    EXPECT_EQ(allocator.on(0).memory_stats().at("reserved_bytes.all.current"), 0);
    // As in PyTorch, an expandable segment's mappings are reserved bytes, not segments.
    EXPECT_EQ(allocator.on(1).memory_stats().at("segment.all.current"), 0);
    for (const device_address block : blocks) {
        allocator.free(block, 1);
    }
    allocator.empty_cache();
    EXPECT_EQ(allocator.on(1).memory_stats().at("reserved_bytes.all.current"), 0);
    EXPECT_EQ(allocator.on(1).check_consistency(), "");
}

TEST_F(TwoGpus, EachDeviceTakesItsOwnThreads) {
    caching_allocator allocator({gpu0.get(), gpu1.get()});
    std::vector<std::thread> threads;
    for (int t = 0; t < 4; ++t) {
        threads.emplace_back([&allocator, t] {
            const int device = t % 2;
            for (int i = 0; i < 20000; ++i) {
                const uint64_t size = (uint64_t{1} << (9 + (i + t) % 14));
                allocator.free(allocator.allocate(size, device), device);
            }
        });
    }
    for (auto& thread : threads) {
        thread.join();
    }
    for (int d = 0; d < 2; ++d) {
        EXPECT_EQ(allocator.on(d).memory_stats().at("allocation.all.current"), 0);
        EXPECT_EQ(allocator.on(d).memory_stats().at("allocation.all.allocated"), 40000);
        EXPECT_EQ(allocator.on(d).check_consistency(), "");
    }
}

}  // namespace
}  // namespace memtrail

#endif  // MEMTRAIL_HAVE_CUDA

#include <gtest/gtest.h>

#include <sstream>

#include "memtrail/core/caching_allocator.hpp"
#include "memtrail/core/simulated_device.hpp"

namespace memtrail {
namespace {

TEST(Statistics, MemoryStatsHasPyTorchsNames) {
    const auto names = to_memory_stats(device_stats{});
    EXPECT_EQ(names.size(), 122u);  // as torch.cuda.memory_stats() on torch 2.11
    for (const char* key :
         {"allocation.all.current", "segment.small_pool.peak", "active.large_pool.allocated",
          "inactive_split.all.freed", "allocated_bytes.all.current", "reserved_bytes.all.peak",
          "active_bytes.small_pool.current", "inactive_split_bytes.large_pool.freed",
          "requested_bytes.all.allocated", "oversize_allocations.current", "oversize_segments.peak",
          "num_alloc_retries", "num_ooms", "num_sync_all_streams", "num_device_alloc",
          "num_device_free", "max_split_size"}) {
        EXPECT_TRUE(names.count(key)) << key;
    }
}

TEST(Statistics, FormatSizeLikePyTorch) {
    EXPECT_EQ(format_size(512), "512 bytes");
    EXPECT_EQ(format_size(1024), "1024 bytes");
    EXPECT_EQ(format_size(1536), "1.50 KiB");
    EXPECT_EQ(format_size(20ull << 20), "20.00 MiB");
    EXPECT_EQ(format_size(3ull << 30), "3.00 GiB");
}

TEST(Statistics, MemorySummaryTableLayout) {
    simulated_device dev;
    device_allocator a(dev);
    const device_address x = a.allocate(3ull << 30);
    a.allocate(1000);
    a.free(x);
    const std::string summary = a.memory_summary();
    std::istringstream lines(summary);
    std::string line;
    std::vector<std::string> all;
    while (std::getline(lines, line)) {
        all.push_back(line);
        EXPECT_EQ(line.size(), 77u) << "'" << line << "'";
    }
    ASSERT_EQ(all.size(), 47u);
    EXPECT_EQ(all[1],
              "|                  PyTorch CUDA memory summary, device ID 0                 |");
    EXPECT_EQ(all[3],
              "|            CUDA OOMs: 0            |        cudaMalloc retries: 0         |");
    EXPECT_EQ(all[5],
              "|        Metric         | Cur Usage  | Peak Usage | Tot Alloc  | Tot Freed  |");
    EXPECT_EQ(all[7],
              "| Allocated memory      |   1024 B   |   3072 MiB |   3072 MiB |   3072 MiB |");
    EXPECT_EQ(all[8],
              "|       from large pool |      0 B   |   3072 MiB |   3072 MiB |   3072 MiB |");
    EXPECT_EQ(all[9],
              "|       from small pool |   1024 B   |      0 MiB |      0 MiB |      0 MiB |");
    EXPECT_EQ(all[27],
              "| Allocations           |       1    |       2    |       2    |       1    |");
    const std::string abbreviated = a.memory_summary(true);
    EXPECT_EQ(std::count(abbreviated.begin(), abbreviated.end(), '\n'), 29);
}

}  // namespace
}  // namespace memtrail

// The environment through librecorder.so, as a program meets it: injected device faults, a
// refused dump signal, a free on a device that does not exist. librecorder reads its environment
// once, at its first successful call, so ctest runs each test in a process of its own.

#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

#include "memtrail/memtrail.h"

namespace {

constexpr ssize_t MiB = 1 << 20;

std::string last_error() {
    return memtrail_last_error();
}

// MEMTRAIL_SIM_FAIL_RATE=1: every device allocation fails, so the first request is an
// out-of-memory error, the way a program testing its own OOM handling wants it.
TEST(librecorder_environment, fail_rate_one_makes_every_request_run_out_of_memory) {
    setenv("MEMTRAIL_DEVICE", "sim:1GiB", 1);
    setenv("MEMTRAIL_SIM_FAIL_RATE", "1", 1);
    EXPECT_EQ(memtrail_malloc(MiB, 0, nullptr), nullptr);
    EXPECT_NE(last_error().find("out of memory"), std::string::npos) << last_error();
    const std::string summary = memtrail_memory_summary(0);
    EXPECT_NE(summary.find("CUDA OOMs: 1 "), std::string::npos) << summary;
}

// MEMTRAIL_SIM_FAIL_NTH=2: the second device allocation fails once; the allocator frees its
// cache and retries, as it would on a GPU.
TEST(librecorder_environment, fail_nth_fails_that_device_allocation_once) {
    setenv("MEMTRAIL_DEVICE", "sim:1GiB", 1);
    setenv("MEMTRAIL_SIM_FAIL_NTH", "2", 1);
    void* small = memtrail_malloc(MiB, 0, nullptr);
    ASSERT_NE(small, nullptr) << last_error();
    memtrail_free(small, MiB, 0, nullptr);
    void* large = memtrail_malloc(30 * MiB, 0, nullptr);
    ASSERT_NE(large, nullptr) << last_error();
    const std::string summary = memtrail_memory_summary(0);
    EXPECT_NE(summary.find("cudaMalloc retries: 1 "), std::string::npos) << summary;
    memtrail_free(large, 30 * MiB, 0, nullptr);
}

TEST(librecorder_environment, a_signal_that_means_something_else_is_refused) {
    setenv("MEMTRAIL_DEVICE", "sim:1GiB", 1);
    setenv("MEMTRAIL_SIGNAL_DUMP", "never-written.memtrail", 1);
    setenv("MEMTRAIL_DUMP_SIGNAL", "11", 1);
    EXPECT_EQ(memtrail_device_count(), -1);
    EXPECT_NE(last_error().find("MEMTRAIL_DUMP_SIGNAL=\"11\""), std::string::npos) << last_error();
    // Fixed, the next call starts.
    setenv("MEMTRAIL_DUMP_SIGNAL", "SIGUSR2", 1);
    EXPECT_EQ(memtrail_device_count(), 1) << last_error();
}

// Device 7 was refused and device -3 was not: both are now.
TEST(librecorder_environment, free_on_a_negative_device_is_refused) {
    setenv("MEMTRAIL_DEVICE", "sim:1GiB", 1);
    void* block = memtrail_malloc(MiB, 0, nullptr);
    ASSERT_NE(block, nullptr) << last_error();
    for (const int bad : {7, -3}) {
        memtrail_free(block, MiB, bad, nullptr);
        EXPECT_NE(last_error().find("on device " + std::to_string(bad) +
                                    ", but it was allocated on device 0"),
                  std::string::npos)
            << last_error();
    }
    memtrail_free(block, MiB, 0, nullptr);
    EXPECT_EQ(last_error(), "");
}

}  // namespace

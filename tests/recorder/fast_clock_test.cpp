// The clock every recorded event reads: the time-stamp counter, converted with a rate measured
// against the system clock, must tell the system clock's time before the first measurement,
// after it and across the re-measurements, and not step back by more than a re-measurement's
// correction.

#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <thread>

#include "detail/fast_clock.hpp"

namespace memtrail::recorder::detail {
namespace {

// 1.3 s: past the first measurement (20 ms) and the first re-measurement (1 s).
TEST(FastClock, TellsTheSystemClocksTimeBeforeAndAfterEachMeasurement) {
    const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(1300);
    int samples = 0;
    while (std::chrono::steady_clock::now() < until) {
        const int64_t before = system_now_ns();
        const int64_t fast = fast_now_ns();
        const int64_t after = system_now_ns();
        // Within a millisecond of the system clock around it (the rate is re-measured every
        // second, so the two part by a second's drift at most).
        EXPECT_GT(fast, before - 1'000'000) << "sample " << samples;
        EXPECT_LT(fast, after + 1'000'000) << "sample " << samples;
        ++samples;
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    EXPECT_GT(samples, 100);
}

TEST(FastClock, BackToBackReadsNeverStepBackMoreThanACorrection) {
    int64_t last = fast_now_ns();
    int64_t largest_step_back = 0;
    const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(300);
    while (std::chrono::steady_clock::now() < until) {
        for (int i = 0; i < 1000; ++i) {
            const int64_t now = fast_now_ns();
            if (now < last && last - now > largest_step_back) {
                largest_step_back = last - now;
            }
            last = now;
        }
    }
    EXPECT_LT(largest_step_back, 100'000);  // 100 us
}

}  // namespace
}  // namespace memtrail::recorder::detail

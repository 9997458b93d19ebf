// The device lock: mutual exclusion among spinning and sleeping waiters, and re-entry by its
// owner (a free-memory callback frees from inside an allocation).

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <mutex>
#include <thread>
#include <vector>

#include "detail/reentrant_mutex.hpp"

namespace memtrail::detail {
namespace {

TEST(ReentrantMutex, EightThreadsNeverOverlapAndEveryIncrementCounts) {
    reentrant_mutex mutex;
    uint64_t counter = 0;  // plain: only the lock keeps the increments apart
    int inside = 0;
    bool overlapped = false;
    constexpr int threads = 8;
    constexpr int rounds = 20000;
    std::vector<std::thread> workers;
    for (int t = 0; t < threads; ++t) {
        workers.emplace_back([&, t] {
            for (int i = 0; i < rounds; ++i) {
                std::lock_guard<reentrant_mutex> lock(mutex);
                overlapped |= ++inside != 1;
                ++counter;
                // Now and then a holder outlasts the waiters' spin, so that they sleep and the
                // release must wake them.
                if (i % 4096 == static_cast<int>(t)) {
                    std::this_thread::sleep_for(std::chrono::microseconds(200));
                }
                --inside;
            }
        });
    }
    for (auto& w : workers) {
        w.join();
    }
    EXPECT_FALSE(overlapped);
    EXPECT_EQ(counter, uint64_t{threads} * rounds);
}

TEST(ReentrantMutex, OwnerTakesItAgainAndOthersWaitForTheOutermostRelease) {
    reentrant_mutex mutex;
    mutex.lock();
    mutex.lock();
    std::atomic<bool> taken{false};
    std::thread other([&] {
        std::lock_guard<reentrant_mutex> lock(mutex);
        taken = true;
    });
    mutex.unlock();
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    // Still held once: the other thread is waiting (asleep by now, past its spin).
    EXPECT_FALSE(taken);
    mutex.unlock();
    other.join();
    EXPECT_TRUE(taken);
}

}  // namespace
}  // namespace memtrail::detail

// The device lock: mutual exclusion among spinning and sleeping waiters, re-entry by its owner (a
// free-memory callback frees from inside an allocation), and its bias to a thread that takes it
// many times in a row, revoked by any other.

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <mutex>
#include <thread>
#include <vector>

#include "detail/reentrant_mutex.hpp"
#include "memtrail/core/process_barrier.hpp"

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

// The bias takes the lock with plain stores only in a process with other threads; glibc's flag
// never goes back once a thread has started.
void leave_single_threaded() {
    std::thread([] {}).join();
}

// Tests of the bias itself, which only a kernel with membarrier gives.
class BiasedReentrantMutex : public ::testing::Test {
  protected:
    void SetUp() override {
        if (!process_barrier_ready()) {
            GTEST_SKIP() << "this kernel offers no membarrier(PRIVATE_EXPEDITED): the lock is "
                            "never biased";
        }
        leave_single_threaded();
    }
};

TEST_F(BiasedReentrantMutex, AThreadThatTakesItManyTimesInARowHasItBiasedToItself) {
    reentrant_mutex mutex(8);
    for (int i = 0; i < 7; ++i) {
        std::lock_guard<reentrant_mutex> lock(mutex);
    }
    EXPECT_FALSE(mutex.biased_to_this_thread());
    { std::lock_guard<reentrant_mutex> lock(mutex); }
    EXPECT_TRUE(mutex.biased_to_this_thread());
    // Taken and given back through the bias, re-entered too.
    mutex.lock();
    mutex.lock();
    mutex.unlock();
    mutex.unlock();
    EXPECT_TRUE(mutex.biased_to_this_thread());
}

TEST(ReentrantMutex, ALockMadeNeverBiasedIsNot) {
    leave_single_threaded();
    reentrant_mutex mutex(reentrant_mutex::never_biased);  // MEMTRAIL_DEVICE_LOCK_BIAS=off
    for (int i = 0; i < 5000; ++i) {
        std::lock_guard<reentrant_mutex> lock(mutex);
    }
    EXPECT_FALSE(mutex.biased_to_this_thread());
}

TEST_F(BiasedReentrantMutex, AnotherThreadRevokesTheBiasOnceTheOwnerReleasesIt) {
    reentrant_mutex mutex(4);
    for (int i = 0; i < 4; ++i) {
        std::lock_guard<reentrant_mutex> lock(mutex);
    }
    ASSERT_TRUE(mutex.biased_to_this_thread());
    mutex.lock();
    mutex.lock();
    std::atomic<bool> taken{false};
    std::atomic<bool> tried{false};
    std::thread other([&] {
        // Through try_lock, as a thread that finds the lock word free does: it waits for the
        // biased owner, whose hold the word does not show.
        tried = true;
        ASSERT_EQ(mutex.try_lock(), reentrant_mutex::try_result::acquired);
        taken = true;
        mutex.unlock();
    });
    while (!tried) {
        std::this_thread::yield();
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    EXPECT_FALSE(taken);
    mutex.unlock();
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    EXPECT_FALSE(taken);  // still held once
    mutex.unlock();
    other.join();
    EXPECT_TRUE(taken);
    EXPECT_FALSE(mutex.biased_to_this_thread());
    // Revoked before it served 4 acquisitions: the next bias needs 8 in a row.
    for (int i = 0; i < 7; ++i) {
        std::lock_guard<reentrant_mutex> lock(mutex);
    }
    EXPECT_FALSE(mutex.biased_to_this_thread());
    { std::lock_guard<reentrant_mutex> lock(mutex); }
    EXPECT_TRUE(mutex.biased_to_this_thread());
}

TEST(ReentrantMutex, ThreadsThatTakeTurnsInBurstsNeverOverlapWhileTheBiasMoves) {
    leave_single_threaded();
    reentrant_mutex mutex(1);  // biased to whoever takes it twice in a row
    uint64_t counter = 0;      // plain: only the lock keeps the increments apart
    int inside = 0;
    bool overlapped = false;
    std::atomic<int> biased_holds{0};
    constexpr int threads = 4;
    constexpr int rounds = 200;
    constexpr int burst = 64;
    // Each thread takes the lock `burst` times in its turn and hands the turn on at its last hold,
    // holding it: the next thread revokes the bias while its owner holds the lock, and the two
    // never contend for it after (which would make the next bias need a longer run than a burst).
    std::atomic<int> turn{0};
    std::vector<std::thread> workers;
    for (int t = 0; t < threads; ++t) {
        workers.emplace_back([&, t] {
            for (int r = 0; r < rounds; ++r) {
                while (turn.load() != r * threads + t) {
                    std::this_thread::yield();
                }
                for (int i = 0; i < burst; ++i) {
                    std::lock_guard<reentrant_mutex> lock(mutex);
                    overlapped |= ++inside != 1;
                    ++counter;
                    if (i == burst - 1) {
                        // The turn handed on while held, and held on past the next thread's
                        // revocation (a barrier of a few microseconds).
                        turn.fetch_add(1);
                        std::this_thread::sleep_for(std::chrono::microseconds(100));
                    }
                    overlapped |= inside != 1;
                    if (mutex.biased_to_this_thread()) {
                        biased_holds.fetch_add(1, std::memory_order_relaxed);
                    }
                    --inside;
                }
            }
        });
    }
    for (auto& w : workers) {
        w.join();
    }
    EXPECT_FALSE(overlapped);
    EXPECT_EQ(counter, uint64_t{threads} * rounds * burst);
    if (process_barrier_ready()) {
        EXPECT_GT(biased_holds.load(), threads * rounds);  // the bias did move between them
    }
}

}  // namespace
}  // namespace memtrail::detail

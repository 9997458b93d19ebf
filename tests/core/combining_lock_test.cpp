// The device lock's delegation: every operation runs exactly once and alone, whether its thread
// took the lock or a holder ran it; a holder's own re-entry runs directly.

#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <thread>
#include <vector>

#include "detail/combining_lock.hpp"

namespace memtrail::detail {
namespace {

struct increment {
    uint64_t by = 0;
    uint64_t result = 0;  // the counter just after this increment
    std::thread::id ran_on;
};

struct guarded_counter {
    reentrant_mutex mutex;
    combining_lock<increment> combiner{mutex};
    uint64_t value = 0;  // plain: only the lock keeps the increments apart
    int inside = 0;
    bool overlapped = false;

    void run(increment& op) {
        overlapped |= ++inside != 1;
        value += op.by;
        op.result = value;
        op.ran_on = std::this_thread::get_id();
        --inside;
    }

    // Returns whether `op` was run by another thread.
    bool add(increment& op, bool hold_long) {
        using entry = combining_lock<increment>::entry;
        const entry e = combiner.lock_or_delegate(op);
        if (e == entry::delegated) {
            return true;
        }
        run(op);
        // Now and then a holder outlasts the waiters' spin, so that they wait on the lock
        // itself (and sleep) while their operations stay published.
        if (hold_long) {
            std::this_thread::sleep_for(std::chrono::microseconds(300));
        }
        if (e == entry::acquired) {
            combiner.serve_waiters([this](increment& waiting) { run(waiting); });
        }
        mutex.unlock();
        return false;
    }
};

TEST(CombiningLock, EightThreadsRunEveryOperationOnceAndAlone) {
    guarded_counter counter;
    constexpr int threads = 8;
    constexpr int rounds = 20000;
    std::vector<std::vector<uint64_t>> results(threads);
    std::vector<int> delegated(threads, 0);
    std::vector<std::thread> workers;
    for (int t = 0; t < threads; ++t) {
        workers.emplace_back([&, t] {
            for (int i = 0; i < rounds; ++i) {
                increment op{.by = 1, .result = 0, .ran_on = {}};
                const bool by_other = counter.add(op, i % 4096 == t);
                EXPECT_EQ(by_other, op.ran_on != std::this_thread::get_id());
                delegated[static_cast<size_t>(t)] += by_other;
                results[static_cast<size_t>(t)].push_back(op.result);
            }
        });
    }
    for (auto& w : workers) {
        w.join();
    }
    EXPECT_FALSE(counter.overlapped);
    EXPECT_EQ(counter.value, uint64_t{threads} * rounds);
    // Each increment saw a counter value no other one saw: none ran twice or was lost.
    std::vector<bool> seen(threads * rounds + 1, false);
    for (const auto& mine : results) {
        for (uint64_t r : mine) {
            ASSERT_GE(r, 1u);
            ASSERT_LE(r, uint64_t{threads} * rounds);
            EXPECT_FALSE(seen[r]) << r;
            seen[r] = true;
        }
    }
    // Whether any operation was delegated depends on the scheduling; on one core it may not be.
    int total_delegated = 0;
    for (int d : delegated) {
        total_delegated += d;
    }
    std::printf("delegated %d of %d operations\n", total_delegated, threads * rounds);
}

TEST(CombiningLock, TheOwnerReentersAndAWaiterIsServedByTheHolder) {
    guarded_counter counter;
    using entry = combining_lock<increment>::entry;
    increment outer{.by = 1, .result = 0, .ran_on = {}};
    ASSERT_EQ(counter.combiner.lock_or_delegate(outer), entry::acquired);
    increment inner{.by = 1, .result = 0, .ran_on = {}};
    EXPECT_EQ(counter.combiner.lock_or_delegate(inner), entry::reentered);
    counter.mutex.unlock();
    // Still held once: another thread cannot take it and publishes instead, to be served.
    std::thread other([&] {
        increment op{.by = 5, .result = 0, .ran_on = {}};
        EXPECT_TRUE(counter.add(op, false));
        EXPECT_EQ(op.result, 5u);
    });
    while (true) {
        bool served = false;
        counter.combiner.serve_waiters([&](increment& waiting) {
            counter.run(waiting);
            served = true;
        });
        if (served) {
            break;
        }
        std::this_thread::yield();
    }
    counter.mutex.unlock();
    other.join();
    EXPECT_EQ(counter.value, 5u);
}

// A thread that waited once costs later holders nothing: after 64 serves that found no
// operation its slot is no longer looked at, and when it waits again it is served again.
TEST(CombiningLock, SlotsOfThreadsThatStopWaitingAreForgottenAndComeBack) {
    guarded_counter counter;
    using entry = combining_lock<increment>::entry;
    const auto served_waiter = [&] {
        increment outer{.by = 1, .result = 0, .ran_on = {}};
        ASSERT_EQ(counter.combiner.lock_or_delegate(outer), entry::acquired);
        counter.run(outer);
        std::thread other([&] {
            increment op{.by = 1, .result = 0, .ran_on = {}};
            EXPECT_TRUE(counter.add(op, false));
        });
        bool served = false;
        while (!served) {
            counter.combiner.serve_waiters([&](increment& waiting) {
                counter.run(waiting);
                served = true;
            });
        }
        counter.mutex.unlock();
        other.join();
    };
    served_waiter();
    EXPECT_EQ(counter.combiner.watched_slots(), 1);
    const auto alone = [&](int times) {
        for (int i = 0; i < times; ++i) {
            increment op{.by = 1, .result = 0, .ran_on = {}};
            EXPECT_FALSE(counter.add(op, false));
        }
    };
    alone(63);
    EXPECT_EQ(counter.combiner.watched_slots(), 1);
    alone(1);
    EXPECT_EQ(counter.combiner.watched_slots(), 0);
    served_waiter();
    EXPECT_EQ(counter.combiner.watched_slots(), 1);
    EXPECT_EQ(counter.value, 1u + 1u + 64u + 1u + 1u);
}

}  // namespace
}  // namespace memtrail::detail

#pragma once
// The device lock. The owning thread may take it again (a free-memory callback frees blocks
// from inside an allocation, as PyTorch allows with its recursive mutex); the common, first
// acquisition costs one compare-exchange. In a process that has no other thread (glibc's
// __libc_single_threaded, which libstdc++ reads for the same purpose) it costs a plain store, as
// glibc's mutex does there (without it a one-thread pair measured 17 ns slower than std::mutex):
// no other thread can be waiting, and one started while the lock is held sees it held, so the
// release then goes the atomic way and wakes it.
//
// It is held for a few hundred instructions, so a waiter first spins, reading only, for about as
// long as a holder keeps it: under contention a std::mutex sends waiters to sleep at once and
// makes every release a futex wake-up (a system call each, and a sleeping thread that takes
// microseconds to run again). Only a waiter that outlasts its spin sleeps (C++20 atomic wait).
// The lock word sits on a cache line of its own, so that spinning waiters do not pull the lines
// of the state it guards away from the holder.

#include <sys/single_threaded.h>
#include <atomic>
#include <cstdint>
#include <thread>

namespace memtrail::detail {

class alignas(64) reentrant_mutex {
  public:
    void lock() {
        const std::thread::id me = std::this_thread::get_id();
        // Only this thread can have stored its own id, so a relaxed read is enough to tell.
        if (owner_.load(std::memory_order_relaxed) == me) {
            ++depth_;
            return;
        }
        if (__libc_single_threaded) {
            state_.store(locked, std::memory_order_relaxed);
        } else {
            uint32_t expected = unlocked;
            if (!state_.compare_exchange_strong(expected, locked, std::memory_order_acquire,
                                                std::memory_order_relaxed)) [[unlikely]] {
                wait_and_lock();
            }
        }
        owner_.store(me, std::memory_order_relaxed);
        depth_ = 1;
    }
    // What try_lock found: the lock free (now this thread's), this thread's already (taken again),
    // or another thread's (nothing taken).
    enum class try_result { acquired, reentered, busy };
    try_result try_lock() {
        const std::thread::id me = std::this_thread::get_id();
        if (owner_.load(std::memory_order_relaxed) == me) {
            ++depth_;
            return try_result::reentered;
        }
        if (__libc_single_threaded) {
            state_.store(locked, std::memory_order_relaxed);
        } else {
            // Looked at before the exchange: a failed exchange would still take the line from
            // the holder, who then waits for it back to release.
            uint32_t expected = unlocked;
            if (state_.load(std::memory_order_relaxed) != unlocked ||
                !state_.compare_exchange_strong(expected, locked, std::memory_order_acquire,
                                                std::memory_order_relaxed)) {
                return try_result::busy;
            }
        }
        owner_.store(me, std::memory_order_relaxed);
        depth_ = 1;
        return try_result::acquired;
    }
    // A hint for waiters that watch the lock without taking its line: may be stale at once.
    bool looks_free() const { return state_.load(std::memory_order_relaxed) == unlocked; }
    void unlock() {
        if (--depth_ == 0) {
            owner_.store(std::thread::id(), std::memory_order_relaxed);
            if (__libc_single_threaded) {
                state_.store(unlocked, std::memory_order_relaxed);
            } else if (state_.exchange(unlocked, std::memory_order_release) == contended)
                [[unlikely]] {
                state_.notify_one();
            }
        }
    }

  private:
    // The states of the lock word: `contended` means a waiter may sleep, so the release wakes one.
    static constexpr uint32_t unlocked = 0;
    static constexpr uint32_t locked = 1;
    static constexpr uint32_t contended = 2;

    void wait_and_lock();

    std::atomic<uint32_t> state_{unlocked};
    std::atomic<std::thread::id> owner_{};
    int depth_ = 0;
};

}  // namespace memtrail::detail

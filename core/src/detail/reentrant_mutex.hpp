#pragma once
// The device lock. The owning thread may take it again (a free-memory callback frees blocks
// from inside an allocation, as PyTorch allows with its recursive mutex); the common, first
// acquisition costs one compare-exchange. In a process that has no other thread (glibc's
// __libc_single_threaded, which libstdc++ reads for the same purpose) it costs a plain store, as
// glibc's mutex does there (without it a one-thread pair measured 17 ns slower than std::mutex):
// no other thread can be waiting, and one started while the lock is held sees it held, so the
// release then goes the atomic way and wakes it.
//
// Every CUDA program has other threads (the runtime starts some), yet most allocate from one
// thread at a time. So a thread that takes the lock `bias_after` times in a row through the lock
// word gets it biased to itself: it then takes and releases it with plain stores to a flag of its
// own and a compiler barrier (a compare-exchange and an exchange cost 17 to 18 ns a pair on an H100
// host; a cached 512 B pair took 0.72 times as long with the bias, in one process). Another
// thread takes the lock word as before, then revokes the bias: it raises `revoking_`, runs a
// barrier on every thread of the process (process_barrier.hpp: Dekker's protocol with the fence
// on the rare side), and waits for the owner's flag to fall. The revocation costs a few
// microseconds, so a bias revoked before it served `bias_after` acquisitions doubles the run the
// next one needs.
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
#include <memory>
#include <thread>
#include <vector>

namespace memtrail::detail {

class alignas(64) reentrant_mutex {
  public:
    // Acquisitions in a row by one thread, through the lock word, after which the lock is biased
    // to it: a revocation (2.5 to 10 us) then costs at most about 10 ns for each.
    // never_biased: none (MEMTRAIL_DEVICE_LOCK_BIAS=off).
    static constexpr uint32_t default_bias_after = 1024;
    static constexpr uint32_t never_biased = 0;

    explicit reentrant_mutex(uint32_t bias_after = default_bias_after)
        : first_bias_after_(bias_after), bias_after_(bias_after) {}
    reentrant_mutex(const reentrant_mutex&) = delete;
    reentrant_mutex& operator=(const reentrant_mutex&) = delete;

    void lock() {
        const std::thread::id me = std::this_thread::get_id();
        // Only this thread can have stored its own id, so a relaxed read is enough to tell.
        if (owner_.load(std::memory_order_relaxed) == me) {
            ++depth_;
            return;
        }
        if (!enter_biased(me)) {
            if (__libc_single_threaded) {
                state_.store(locked, std::memory_order_relaxed);
            } else {
                uint32_t expected = unlocked;
                if (!state_.compare_exchange_strong(expected, locked, std::memory_order_acquire,
                                                    std::memory_order_relaxed)) [[unlikely]] {
                    wait_and_lock();
                }
                took_lock_word(me);
            }
        }
        owner_.store(me, std::memory_order_relaxed);
        depth_ = 1;
    }
    // What try_lock found: the lock free (now this thread's), this thread's already (taken again),
    // or another thread's (nothing taken). Taking it from a biased owner waits for the owner to
    // release it: the lock word does not show that the owner holds it.
    enum class try_result { acquired, reentered, busy };
    try_result try_lock() {
        const std::thread::id me = std::this_thread::get_id();
        if (owner_.load(std::memory_order_relaxed) == me) {
            ++depth_;
            return try_result::reentered;
        }
        if (!enter_biased(me)) {
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
                took_lock_word(me);
            }
        }
        owner_.store(me, std::memory_order_relaxed);
        depth_ = 1;
        return try_result::acquired;
    }
    // A hint for waiters that watch the lock without taking its line: may be stale at once, and
    // says nothing of a biased owner's hold.
    bool looks_free() const { return state_.load(std::memory_order_relaxed) == unlocked; }
    void unlock() {
        if (--depth_ == 0) {
            owner_.store(std::thread::id(), std::memory_order_relaxed);
            if (bias* const held = biased_hold_) {
                biased_hold_ = nullptr;
                held->holding.store(0, std::memory_order_release);
            } else if (__libc_single_threaded) {
                state_.store(unlocked, std::memory_order_relaxed);
            } else if (state_.exchange(unlocked, std::memory_order_release) == contended)
                [[unlikely]] {
                state_.notify_one();
            }
        }
    }

    // Whether the lock is biased to the calling thread now (for tests).
    bool biased_to_this_thread() const {
        const bias* granted = bias_.load(std::memory_order_acquire);
        return granted != nullptr && granted->owner == std::this_thread::get_id();
    }

  private:
    // The states of the lock word: `contended` means a waiter may sleep, so the release wakes one.
    static constexpr uint32_t unlocked = 0;
    static constexpr uint32_t locked = 1;
    static constexpr uint32_t contended = 2;
    // A run grows at most this many times: revocations then cost a fraction of a nanosecond an
    // acquisition, and a thread left alone after a contended phase is biased again soon.
    static constexpr uint32_t most_bias_growth = 64;

    // A thread's grant of the bias, kept for the lock's life and given to that thread again: only
    // its owner writes `holding`, so an owner that was slow to see a revocation, and backs off,
    // never clears the flag of the thread the lock is biased to next.
    struct alignas(64) bias {
        explicit bias(std::thread::id thread) : owner(thread) {}
        const std::thread::id owner;
        std::atomic<uint32_t> holding{0};  // 1 while the owner holds the lock through the bias
        uint64_t entries = 0;              // acquisitions through this grant (the owner's)
    };

    // The biased owner's acquisition: its flag raised, then the revocation and the grant looked
    // at, with only the compiler kept from reordering them; a revoker's process_barrier()
    // orders them on the CPU.
    bool enter_biased(std::thread::id me) {
        bias* const granted = bias_.load(std::memory_order_acquire);
        if (granted == nullptr || granted->owner != me) [[likely]] {
            return false;
        }
        granted->holding.store(1, std::memory_order_relaxed);
        std::atomic_signal_fence(std::memory_order_seq_cst);
        if (revoking_.load(std::memory_order_acquire) ||
            bias_.load(std::memory_order_acquire) != granted) [[unlikely]] {
            granted->holding.store(0, std::memory_order_release);
            return false;
        }
        ++granted->entries;
        biased_hold_ = granted;
        return true;
    }

    // After taking the lock word: revokes another thread's bias, and biases the lock to this
    // thread once it has taken the word bias_after_ times in a row.
    void took_lock_word(std::thread::id me) {
        if (bias_.load(std::memory_order_relaxed) != nullptr) [[unlikely]] {
            revoke_bias();
        }
        if (last_taker_ != me) {
            last_taker_ = me;
            run_ = 0;
        }
        if (++run_ >= bias_after_ && bias_after_ != never_biased) [[unlikely]] {
            bias_to(me);
        }
    }
    void wait_and_lock();
    void revoke_bias();
    void bias_to(std::thread::id me);

    std::atomic<uint32_t> state_{unlocked};
    std::atomic<std::thread::id> owner_{};
    int depth_ = 0;
    // The bias: the grant of the thread it is given to (nullptr: none), and whether a revocation
    // has begun (raised before the grant goes, lowered after the next one is set).
    std::atomic<bias*> bias_{nullptr};
    std::atomic<bool> revoking_{false};
    bias* biased_hold_ = nullptr;  // the holder's: the grant it holds the lock through
    // Under the lock word: who took it last and how many times in a row, the run a bias needs
    // now, and every thread's grant.
    std::thread::id last_taker_{};
    uint32_t run_ = 0;
    const uint32_t first_bias_after_;
    uint32_t bias_after_;
    std::vector<std::unique_ptr<bias>> grants_;
};

}  // namespace memtrail::detail

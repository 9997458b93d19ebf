#pragma once
// Delegation (flat combining) on the device lock, for short operations. A thread that finds the
// lock taken does not queue for it: it publishes its operation in a slot of its own and spins on
// that slot, and the holder, before it releases the lock, runs the published operations and marks
// them done. Under contention the state the lock guards then stays in the holder's cache instead
// of moving to each next holder, and the lock word changes hands once for several operations.
//
// A waiter whose operation has not been taken watches the lock too and, seeing it free, takes it
// and withdraws the operation (or finds it done). One that waits longer than a holder's batch
// takes the lock's own way (spin, then sleep), and one that finds every slot in use takes the
// lock at once. Slots are claimed per operation, so threads that come and go hold none. Made
// with `delegate` false, a waiter just takes the lock's own way, as without this class.
//
// Op is the caller's record of an operation (arguments and result); the holder reaches it
// through the slot, on the waiter's stack, which stays put until the slot says done.

#include <atomic>
#include <bit>
#include <cstdint>

#include "detail/reentrant_mutex.hpp"

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace memtrail::detail {

template <typename Op>
class combining_lock {
  public:
    combining_lock(reentrant_mutex& mutex, bool delegate) : mutex_(mutex), delegate_(delegate) {}
    combining_lock(const combining_lock&) = delete;
    combining_lock& operator=(const combining_lock&) = delete;

    // acquired: this thread took the lock; it runs its operation, then serve_waiters, then
    // unlocks. reentered: it held the lock already and took it once more; it runs its operation
    // and unlocks without serving (it is inside a decision of its own). delegated: the holder ran
    // `op` and the lock is not held.
    enum class entry { acquired, reentered, delegated };

    entry lock_or_delegate(Op& op) {
        switch (mutex_.try_lock()) {
            case reentrant_mutex::try_result::acquired:
                return entry::acquired;
            case reentrant_mutex::try_result::reentered:
                return entry::reentered;
            case reentrant_mutex::try_result::busy:
                break;
        }
        return when_busy(op);
    }

    // The second half of lock_or_delegate, for a caller that tried the mutex itself and found it
    // busy: it builds its operation's record only then (the record costs something to build).
    entry when_busy(Op& op) {
        if (!delegate_) {
            mutex_.lock();
            return entry::acquired;
        }
        return wait_or_delegate(op);
    }

    // Runs the operations published so far, by a thread that holds the lock once: passes over
    // the slots until one finds nothing new, at most max_passes. `run` must not throw.
    template <typename Run>
    void serve_waiters(Run&& run) {
        if (claimed_.load(std::memory_order_relaxed) == 0) [[likely]] {
            return;
        }
        serve_published(run);
    }

  private:
    static constexpr int slot_count = 64;
    static constexpr int max_passes = 4;
    // About a holder's batch of operations (a pause takes 10 to 140 cycles); past it the waiter
    // joins the lock's own wait, which sleeps behind a holder that is slow (a device call).
    static constexpr int spins_before_lock = 512;

    // A slot's states: claimed by a waiter but not yet (or no longer) holding an operation,
    // holding one the holder may run, run.
    static constexpr uint32_t empty = 0;
    static constexpr uint32_t published = 1;
    static constexpr uint32_t done = 2;

    struct alignas(64) slot {
        std::atomic<uint32_t> state{empty};
        Op* op = nullptr;
    };

    static void pause_briefly() {
#if defined(__x86_64__)
        _mm_pause();
#endif
    }

    [[gnu::noinline]] entry wait_or_delegate(Op& op) {
        const int index = claim_slot();
        if (index < 0) [[unlikely]] {
            mutex_.lock();
            return entry::acquired;
        }
        slot& s = slots_[index];
        s.op = &op;
        s.state.store(published, std::memory_order_release);
        for (int spin = 0;; ++spin) {
            if (s.state.load(std::memory_order_acquire) == done) {
                release_slot(index);
                return entry::delegated;
            }
            if (spin == spins_before_lock) {
                mutex_.lock();
                return withdraw_under_lock(index);
            }
            if (mutex_.looks_free() && mutex_.try_lock() == reentrant_mutex::try_result::acquired) {
                return withdraw_under_lock(index);
            }
            pause_briefly();
        }
    }

    // With the lock held no holder is serving: the operation is either done (by the last one)
    // or still this thread's to run.
    entry withdraw_under_lock(int index) {
        const bool was_done = slots_[index].state.load(std::memory_order_acquire) == done;
        release_slot(index);
        if (was_done) {
            mutex_.unlock();
            return entry::delegated;
        }
        return entry::acquired;
    }

    int claim_slot() {
        // Threads start at different slots, so that they rarely contend for the same bit.
        static std::atomic<unsigned> threads_seen{0};
        thread_local unsigned hint =
            threads_seen.fetch_add(1, std::memory_order_relaxed) % slot_count;
        uint64_t taken = claimed_.load(std::memory_order_relaxed);
        for (int attempt = 0; attempt < 4; ++attempt) {
            const uint64_t unclaimed = ~taken;
            if (unclaimed == 0) {
                return -1;
            }
            const uint64_t from_hint = unclaimed >> hint;
            const unsigned index =
                from_hint ? hint + std::countr_zero(from_hint) : std::countr_zero(unclaimed);
            const uint64_t bit = uint64_t{1} << index;
            // Acquire: the slot's last holder and waiter are done with it before it is reused.
            taken = claimed_.fetch_or(bit, std::memory_order_acquire);
            if ((taken & bit) == 0) {
                hint = index;
                return static_cast<int>(index);
            }
        }
        return -1;
    }

    void release_slot(int index) {
        slots_[index].state.store(empty, std::memory_order_relaxed);
        claimed_.fetch_and(~(uint64_t{1} << index), std::memory_order_release);
    }

    template <typename Run>
    [[gnu::noinline]] void serve_published(Run& run) {
        for (int pass = 0; pass < max_passes; ++pass) {
            uint64_t waiting = claimed_.load(std::memory_order_relaxed);
            bool served = false;
            while (waiting != 0) {
                slot& s = slots_[std::countr_zero(waiting)];
                waiting &= waiting - 1;
                if (s.state.load(std::memory_order_acquire) == published) {
                    run(*s.op);
                    s.state.store(done, std::memory_order_release);
                    served = true;
                }
            }
            if (!served) {
                return;
            }
        }
    }

    reentrant_mutex& mutex_;
    const bool delegate_;
    alignas(64) std::atomic<uint64_t> claimed_{0};  // a bit per slot in use by a waiter
    slot slots_[slot_count];
};

}  // namespace memtrail::detail

#pragma once
// Delegation (flat combining) on the device lock, for short operations. A thread that finds the
// lock taken does not queue for it: it copies its operation into a slot and spins on that slot,
// and the holder, before it releases the lock, runs the published operations and marks them
// done. Under contention the state the lock guards then stays in the holder's cache instead of
// moving to each next holder, and the lock word changes hands once for several operations.
//
// Every cache line that changes hands costs a transfer between cores (a round trip measured 175
// to 260 ns on the H100 hosts), so an operation moves as few as it can: its arguments, its result
// and its slot's state share one line; a thread keeps coming back to the same slot, whose line
// therefore stays in its cache between operations; and the holder learns which slots to look at
// from a mask that grows once per slot, not once per operation, so no line is written by every
// waiter in turn; and a waiter looks at its slot only about as often as a pass can reach it.
//
// A waiter whose operation has not been taken watches the lock too and, seeing it free, takes it
// and withdraws the operation (or finds it done). One that waits longer than a holder's batch
// takes the lock's own way (spin, then sleep), and one that finds no free slot near its own
// takes the lock at once.
//
// Op is the caller's record of an operation (arguments and result), copied into the slot and
// back; it must fit in the slot's line beside the state.

#include <algorithm>
#include <atomic>
#include <bit>
#include <cstdint>
#include <type_traits>

#include "detail/reentrant_mutex.hpp"

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace memtrail::detail {

template <typename Op>
class combining_lock {
  public:
    explicit combining_lock(reentrant_mutex& mutex) : mutex_(mutex) {}
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
    entry when_busy(Op& op) { return wait_or_delegate(op); }

    // Runs the operations published so far, by a thread that holds the lock once: passes over
    // the slots until one finds nothing new, at most max_passes. `run` must not throw.
    template <typename Run>
    void serve_waiters(Run&& run) {
        const uint64_t used = used_.load(std::memory_order_relaxed);
        if (used == 0) [[likely]] {
            return;  // no thread has ever waited
        }
        serve_published(used, run);
    }

    // How many slots the holders look at now (for tests).
    int watched_slots() const { return std::popcount(used_.load(std::memory_order_relaxed)); }

  private:
    static constexpr int slot_count = 64;
    // Passes while each finds new operations, at most: the longer a holder serves, the longer
    // the state stays in its cache, and the longer its own thread waits (a pass is a few
    // operations). Waiting for the served waiters to come back with their next operations
    // (lingering 16 looks after a pass found none) made 8 threads' pairs slower on an H100 host;
    // 64 passes rather than 16 made them faster.
    static constexpr int max_passes = 64;
    // About a holder's batch of operations (a pause takes 10 to 140 cycles); past it the waiter
    // joins the lock's own wait, which sleeps behind a holder that is slow (a device call).
    static constexpr int spins_before_lock = 2048;
    // A waiter looks at the lock word only every so often: each look takes a copy of its line,
    // which the holder's release must then take back.
    static constexpr int spins_between_looks = 8;
    static constexpr uint32_t quiet_serves_to_forget = 64;

    // A slot's states: free, claimed by a waiter that is writing or reading its operation, holding
    // an operation the holder may run, run.
    static constexpr uint32_t free_slot = 0;
    static constexpr uint32_t claimed = 1;
    static constexpr uint32_t published = 2;
    static constexpr uint32_t done = 3;

    struct alignas(64) slot {
        std::atomic<uint32_t> state{free_slot};
        Op op{};
    };
    static_assert(sizeof(slot) == 64, "an operation travels with its slot's state in one line");
    static_assert(std::is_trivially_copyable_v<Op>, "copied in and out of the slot as words");

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
        s.op = op;
        s.state.store(published, std::memory_order_release);
        // Each look takes a copy of the slot's line, which the holder must take back to answer:
        // a waiter looks about as often as a pass can have reached it, so less often the more
        // slots the holder watches (looking at every pause made 8 threads' pairs a fifth to a
        // third slower on an H100 host). At least 2: this slot may have left the mask already.
        const int spins_between_slot_looks =
            std::max(2, 2 * std::popcount(used_.load(std::memory_order_relaxed)));
        int until_slot_look = spins_between_slot_looks;
        for (int spin = 1;; ++spin) {
            if (--until_slot_look == 0) {
                until_slot_look = spins_between_slot_looks;
                if (s.state.load(std::memory_order_acquire) == done) {
                    return take_result(s, op);
                }
            }
            if (spin == spins_before_lock) {
                mutex_.lock();
                return withdraw_under_lock(s, op);
            }
            if (spin % spins_between_looks == 0 && mutex_.looks_free() &&
                mutex_.try_lock() == reentrant_mutex::try_result::acquired) {
                return withdraw_under_lock(s, op);
            }
            pause_briefly();
        }
    }

    entry take_result(slot& s, Op& op) {
        op = s.op;
        s.state.store(free_slot, std::memory_order_release);
        return entry::delegated;
    }

    // With the lock held no holder is serving: the operation is either done (by the last one)
    // or still this thread's to run.
    entry withdraw_under_lock(slot& s, Op& op) {
        if (s.state.load(std::memory_order_acquire) == done) {
            take_result(s, op);
            mutex_.unlock();
            return entry::delegated;
        }
        s.state.store(free_slot, std::memory_order_relaxed);
        return entry::acquired;
    }

    // The slot this thread used last, if it is free, else one of the next few.
    int claim_slot() {
        // Threads start at different slots, so that they rarely want the same one.
        static std::atomic<unsigned> threads_seen{0};
        thread_local unsigned home =
            threads_seen.fetch_add(1, std::memory_order_relaxed) % slot_count;
        for (unsigned step = 0; step < 4; ++step) {
            const unsigned index = (home + step) % slot_count;
            uint32_t expected = free_slot;
            // Acquire: the slot's last holder and waiter are done with it before it is reused.
            if (slots_[index].state.compare_exchange_strong(
                    expected, claimed, std::memory_order_acquire, std::memory_order_relaxed)) {
                home = index;
                const uint64_t bit = uint64_t{1} << index;
                if ((used_.load(std::memory_order_relaxed) & bit) == 0) [[unlikely]] {
                    // Before the publication (release): a holder that sees it sees the bit too.
                    used_.fetch_or(bit, std::memory_order_relaxed);
                }
                return static_cast<int>(index);
            }
        }
        return -1;
    }

    template <typename Run>
    [[gnu::noinline]] void serve_published(uint64_t used, Run& run) {
        if (!serve_pass(used, run)) {
            if (++quiet_serves_ == quiet_serves_to_forget) {
                forget_free_slots(used);
            }
            return;
        }
        quiet_serves_ = 0;
        for (int pass = 1; pass < max_passes; ++pass) {
            if (!serve_pass(used_.load(std::memory_order_relaxed), run)) {
                return;
            }
        }
    }

    // One look at every slot in `used`, running what is published; whether it ran any.
    template <typename Run>
    bool serve_pass(uint64_t used, Run& run) {
        // Every slot's line is asked for before any is read, so that the transfers overlap.
        for (uint64_t ask = used; ask != 0; ask &= ask - 1) {
            __builtin_prefetch(&slots_[std::countr_zero(ask)]);
        }
        bool served = false;
        for (uint64_t waiting = used; waiting != 0; waiting &= waiting - 1) {
            slot& s = slots_[std::countr_zero(waiting)];
            if (s.state.load(std::memory_order_acquire) == published) {
                run(s.op);
                s.state.store(done, std::memory_order_release);
                served = true;
            }
        }
        return served;
    }

    // After this many serves in a row that found no operation, the free slots leave the mask,
    // so that threads that waited once (or have ended) cost later holders nothing. A thread that
    // claims one again puts it back; should it claim it just as it leaves, its operation is not
    // looked at by the holders, and it takes the lock itself when the lock is free.
    void forget_free_slots(uint64_t used) {
        quiet_serves_ = 0;
        uint64_t free_ones = 0;
        for (; used != 0; used &= used - 1) {
            const int index = std::countr_zero(used);
            if (slots_[index].state.load(std::memory_order_relaxed) == free_slot) {
                free_ones |= uint64_t{1} << index;
            }
        }
        used_.fetch_and(~free_ones, std::memory_order_relaxed);
    }

    reentrant_mutex& mutex_;
    // A bit per slot a waiter has used since the slot was last forgotten (forget_free_slots):
    // set once per slot, so its line is rarely written.
    alignas(64) std::atomic<uint64_t> used_{0};
    alignas(64) uint32_t quiet_serves_ = 0;  // under the lock: see forget_free_slots
    slot slots_[slot_count];
};

}  // namespace memtrail::detail

#include "detail/reentrant_mutex.hpp"

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace memtrail::detail {

namespace {

// Long enough to outlast a decision made under the lock (a pause takes 10 to 140 cycles), short
// enough that a waiter behind a holder that sleeps (on a device call, a preemption) sleeps too.
constexpr int spins_before_sleep = 128;

void pause_briefly() {
#if defined(__x86_64__)
    _mm_pause();
#endif
}

}  // namespace

void reentrant_mutex::wait_and_lock() {
    for (int spin = 0; spin < spins_before_sleep; ++spin) {
        // Reads only while the lock is held, so that waiters do not take the line from the holder.
        uint32_t seen = state_.load(std::memory_order_relaxed);
        if (seen == unlocked &&
            state_.compare_exchange_weak(seen, locked, std::memory_order_acquire,
                                         std::memory_order_relaxed)) {
            return;
        }
        pause_briefly();
    }
    // Marking the lock contended before sleeping makes its holder's release wake a waiter; a
    // thread that takes it this way keeps the mark, which at worst costs one spare wake-up.
    while (state_.exchange(contended, std::memory_order_acquire) != unlocked) {
        state_.wait(contended, std::memory_order_relaxed);
    }
}

}  // namespace memtrail::detail

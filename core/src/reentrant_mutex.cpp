#include "detail/reentrant_mutex.hpp"

#include <algorithm>
#include <chrono>

#include "memtrail/core/process_barrier.hpp"

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace memtrail::detail {

namespace {

// Long enough to outlast a decision made under the lock (a pause takes 10 to 140 cycles), short
// enough that a waiter behind a holder that sleeps (on a device call, a preemption) sleeps too.
constexpr int spins_before_sleep = 128;
// A thread the lock has been biased to at most: past it no thread gets a new grant (threads that
// come and go would otherwise leave one each).
constexpr size_t most_grants = 64;

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

void reentrant_mutex::revoke_bias() {
    bias* const granted = bias_.load(std::memory_order_relaxed);
    revoking_.store(true, std::memory_order_relaxed);
    // After the barrier the owner either has its flag raised where this thread sees it, or
    // sees `revoking_` at its next acquisition and takes the lock word.
    process_barrier();
    // The owner may be inside a device call made under the lock: spin, then yield, then sleep.
    for (int waited = 0; granted->holding.load(std::memory_order_acquire) != 0; ++waited) {
        if (waited < spins_before_sleep) {
            pause_briefly();
        } else if (waited < 4 * spins_before_sleep) {
            std::this_thread::yield();
        } else {
            std::this_thread::sleep_for(std::chrono::microseconds(20));
        }
    }
    bias_after_ = granted->entries < bias_after_
                      ? std::min(2 * bias_after_, most_bias_growth * first_bias_after_)
                      : first_bias_after_;
    bias_.store(nullptr, std::memory_order_relaxed);
}

void reentrant_mutex::bias_to(std::thread::id me) {
    run_ = 0;
    if (!process_barrier_ready()) {
        bias_after_ = never_biased;  // no revocation is possible
        return;
    }
    bias* granted = nullptr;
    for (const auto& grant : grants_) {
        if (grant->owner == me) {
            granted = grant.get();
        }
    }
    if (granted == nullptr) {
        if (grants_.size() == most_grants) {
            return;
        }
        granted = grants_.emplace_back(std::make_unique<bias>(me)).get();
    }
    granted->entries = 0;
    // The grant before the all-clear: an owner that sees `revoking_` lowered sees this grant.
    bias_.store(granted, std::memory_order_release);
    revoking_.store(false, std::memory_order_release);
}

}  // namespace memtrail::detail

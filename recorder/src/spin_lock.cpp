#include "detail/spin_lock.hpp"

#include <thread>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace memtrail::recorder::detail {

namespace {

// Spinning this long (a pause takes 10 to 140 cycles) outlasts the pushes the lock guards.
constexpr int spins_before_yield = 64;

void pause_briefly() {
#if defined(__x86_64__)
    _mm_pause();
#endif
}

}  // namespace

void spin_lock::wait_and_lock() {
    int spins = 0;
    do {
        // Reads only while waiting, so that waiters do not take the line from the holder.
        while (locked_.load(std::memory_order_relaxed)) {
            if (spins++ < spins_before_yield) {
                pause_briefly();
            } else {
                std::this_thread::yield();
            }
        }
    } while (locked_.exchange(true, std::memory_order_acquire));
}

}  // namespace memtrail::recorder::detail

#pragma once
// The lock of a device's trace ring. It is taken for every recorded event and held for a few
// stores, where std::mutex costs two calls and two atomic read-modify-writes: uncontended, this
// costs one atomic exchange and a plain store. A waiter that spins for long yields the CPU, since
// a snapshot holds the lock while it copies a batch of 4,096 entries.

#include <atomic>

namespace memtrail::recorder::detail {

class spin_lock {
  public:
    void lock() {
        if (locked_.exchange(true, std::memory_order_acquire)) {
            wait_and_lock();
        }
    }
    void unlock() { locked_.store(false, std::memory_order_release); }

  private:
    void wait_and_lock();

    std::atomic<bool> locked_{false};
};

}  // namespace memtrail::recorder::detail

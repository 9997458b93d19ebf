#pragma once
// The device lock. The owning thread may take it again (a free-memory callback frees blocks
// from inside an allocation, as PyTorch allows with its recursive mutex); the common, first
// acquisition costs a plain mutex's fast path.

#include <atomic>
#include <mutex>
#include <thread>

namespace memtrail::detail {

class reentrant_mutex {
  public:
    void lock() {
        const std::thread::id me = std::this_thread::get_id();
        // Only this thread can have stored its own id, so a relaxed read is enough to tell.
        if (owner_.load(std::memory_order_relaxed) == me) {
            ++depth_;
            return;
        }
        mutex_.lock();
        owner_.store(me, std::memory_order_relaxed);
        depth_ = 1;
    }
    void unlock() {
        if (--depth_ == 0) {
            owner_.store(std::thread::id(), std::memory_order_relaxed);
            mutex_.unlock();
        }
    }

  private:
    std::mutex mutex_;
    std::atomic<std::thread::id> owner_{};
    int depth_ = 0;
};

}  // namespace memtrail::detail

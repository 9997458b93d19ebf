#pragma once
// Fresh memory costs a page fault per 4 KiB page at its first write: a vector filled to millions
// of elements (the pickle machine's value tree) spends a third of its time in the kernel there.
// pages_ahead makes the pages of a reserved vector present a stretch ahead of its filling, on a
// thread of its own, so the filling thread finds them ready.

#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <thread>
#include <vector>

namespace memtrail::snapshot::detail {

class pages_ahead_thread {
  public:
    // Populates [begin, begin + bytes) from its start; at most `ahead` bytes past what filled()
    // last said.
    pages_ahead_thread(const void* begin, size_t bytes);
    // Stops populating and waits for the thread.
    ~pages_ahead_thread();
    pages_ahead_thread(const pages_ahead_thread&) = delete;
    pages_ahead_thread& operator=(const pages_ahead_thread&) = delete;

    // The filling thread has written `bytes` from the start (cheap: a compare, now and then a
    // wake-up).
    void filled(size_t bytes) {
        if (bytes >= next_wake_) {
            next_wake_ = bytes + ahead / 4;
            {
                const std::lock_guard lock(mutex_);
                filled_ = bytes;
            }
            woken_.notify_one();
        }
    }

    static constexpr size_t ahead = size_t{4} << 20;

  private:
    void run();

    uintptr_t begin_;
    size_t bytes_;
    size_t next_wake_ = 0;  // the filling thread's own
    std::mutex mutex_;
    std::condition_variable woken_;
    size_t filled_ = 0;
    bool stop_ = false;
    std::thread thread_;
};

// A vector reserved before it is filled, its pages populated ahead of it. Once the vector
// outgrows its reservation (and moves), nothing more is populated.
template <class T>
class pages_ahead {
  public:
    explicit pages_ahead(const std::vector<T>& v)
        : vector_(v), data_(v.data()), thread_(v.data(), v.capacity() * sizeof(T)) {}

    // Call before appending.
    void keep_ahead() {
        if (vector_.data() == data_) {
            thread_.filled(vector_.size() * sizeof(T));
        }
    }

  private:
    const std::vector<T>& vector_;
    const T* data_;
    pages_ahead_thread thread_;
};

}  // namespace memtrail::snapshot::detail

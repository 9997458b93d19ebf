#include "detail/pages_ahead.hpp"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>

namespace memtrail::snapshot::detail {

pages_ahead_thread::pages_ahead_thread(const void* begin, size_t bytes)
    : begin_(reinterpret_cast<uintptr_t>(begin)), bytes_(bytes) {
    thread_ = std::thread([this] { run(); });
}

pages_ahead_thread::~pages_ahead_thread() {
    {
        const std::lock_guard lock(mutex_);
        stop_ = true;
    }
    woken_.notify_one();
    thread_.join();
}

void pages_ahead_thread::run() {
    const auto page = static_cast<uintptr_t>(sysconf(_SC_PAGESIZE));
    // Whole pages inside the range only: the pages at its ends may hold other allocations.
    const uintptr_t first = (begin_ + page - 1) & ~(page - 1);
    const uintptr_t end = (begin_ + bytes_) & ~(page - 1);
    uintptr_t populated = first;
    std::unique_lock lock(mutex_);
    while (!stop_ && populated < end) {
        const uintptr_t target = std::min(end, (begin_ + filled_ + ahead) & ~(page - 1));
        if (populated >= target) {
            woken_.wait(lock);
            continue;
        }
        lock.unlock();
#ifdef MADV_POPULATE_WRITE
        // Where the kernel cannot (older than 5.14), the pages are faulted in as they are filled.
        if (madvise(reinterpret_cast<void*>(populated), target - populated, MADV_POPULATE_WRITE) !=
            0) {
            return;
        }
#else
        return;
#endif
        populated = target;
        lock.lock();
    }
}

}  // namespace memtrail::snapshot::detail

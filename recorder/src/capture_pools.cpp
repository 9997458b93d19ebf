#include "detail/capture_pools.hpp"

#include <algorithm>

namespace memtrail::recorder::detail {

void capture_pools::prepare_capturing(stream_handle stream) {
    device_allocator& allocator = allocator_;
    device& dev = device_;
    if (underway_count_.load(std::memory_order_acquire) != 0) {
        std::lock_guard lock(mutex_);
        end_finished_locked();
    }
    const uint64_t capture = dev.stream_capture_id(stream);
    if (capture == 0) {
        return;
    }
    std::lock_guard lock(mutex_);
    if (allocator.allocates_to_pool(stream)) {
        return;  // announced (torch's graph capture through the bridge), or begun here already
    }
    // Every stream of the capture (those forked from it too) allocates to its pool.
    allocator.begin_allocate_to_pool(pool_id{capture, 0}, [&dev, capture](stream_handle s) {
        return dev.stream_capture_id(s) == capture;
    });
    underway_.push_back({capture, stream});
    underway_count_.store(underway_.size(), std::memory_order_release);
}

void capture_pools::end_finished_locked() {
    device_allocator& allocator = allocator_;
    device& dev = device_;
    // A stream forked into a capture leaves it when joined: the pool ends early then and is
    // begun again (one more use, still never released) at the capture's next allocation.
    const auto finished = [&](const capture_underway& c) {
        if (dev.stream_capture_id(c.stream) == c.capture) {
            return false;
        }
        allocator.end_allocate_to_pool(pool_id{c.capture, 0});
        return true;
    };
    underway_.erase(std::remove_if(underway_.begin(), underway_.end(), finished), underway_.end());
    underway_count_.store(underway_.size(), std::memory_order_release);
}

}  // namespace memtrail::recorder::detail

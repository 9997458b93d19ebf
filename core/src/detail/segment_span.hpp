#pragma once
// The lowest and highest addresses of every segment a device's allocator has mapped, readable
// without its lock. A free or record_stream that does not name its device is sent by it
// (caching_allocator::device_for): only a device whose span holds an address can own it. The span
// never shrinks, so it says "perhaps"; the device's own lookup, under its lock, decides.

#include <atomic>
#include <cstdint>
#include <limits>

#include "memtrail/core/device.hpp"

namespace memtrail::detail {

class segment_span {
  public:
    // Under the device lock, so one thread widens at a time. A block's address reaches another
    // thread only after the allocation that made its segment returned, so that thread sees the
    // widened span.
    void widen(device_address start, uint64_t size) {
        const device_address end = start + size;
        if (start < low_.load(std::memory_order_relaxed)) {
            low_.store(start, std::memory_order_relaxed);
        }
        if (end > high_.load(std::memory_order_relaxed)) {
            high_.store(end, std::memory_order_relaxed);
        }
    }

    bool may_hold(device_address address) const {
        return address >= low_.load(std::memory_order_relaxed) &&
               address < high_.load(std::memory_order_relaxed);
    }

  private:
    std::atomic<device_address> low_{std::numeric_limits<device_address>::max()};
    std::atomic<device_address> high_{0};
};

}  // namespace memtrail::detail

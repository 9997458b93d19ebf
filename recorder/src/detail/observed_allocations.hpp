#pragma once
// Device allocations the program made itself, outside memtrail's allocator (memtrail run
// --mode observe): each is kept as a segment holding one allocated block, so that the snapshot's
// state, its trace and every report read them like the allocator's own.

#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <vector>

#include "memtrail/core/device.hpp"

namespace memtrail::recorder::detail {

struct observed_allocation {
    uint64_t size = 0;
    stream_handle stream = 0;
    uint64_t context = 0;  // the call_context of the allocating call
};

class observed_allocations {
  public:
    explicit observed_allocations(int device_count) : live_(static_cast<size_t>(device_count)) {}

    // Adds it, unless it overlaps a live one: then returns that one's address and adds nothing.
    std::optional<device_address> add(int device, device_address address,
                                      const observed_allocation& allocation);
    // The allocation at `address`, now forgotten; nullopt when there is none.
    std::optional<observed_allocation> remove(int device, device_address address);
    std::map<device_address, observed_allocation> live(int device) const;

  private:
    mutable std::mutex mutex_;
    std::vector<std::map<device_address, observed_allocation>> live_;
};

}  // namespace memtrail::recorder::detail

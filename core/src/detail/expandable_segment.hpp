#pragma once
// One expandable segment: a large reserved address range whose pages (2 MiB for the small pool,
// 20 MiB for the large pool) are backed with physical memory on demand.

#include <cstdint>
#include <optional>
#include <vector>

#include "memtrail/core/device.hpp"

namespace memtrail::detail {

struct address_range {
    device_address ptr = 0;
    uint64_t size = 0;
};

class expandable_segment {
  public:
    // Reserves room for `max_pages` pages of `page_size` bytes; throws device_error on failure.
    expandable_segment(device& dev, stream_handle stream, uint64_t page_size, uint64_t max_pages);
    ~expandable_segment();
    expandable_segment(const expandable_segment&) = delete;
    expandable_segment& operator=(const expandable_segment&) = delete;

    // Backs the pages covering `range` (which starts on a page boundary). Returns the range
    // actually mapped (whole pages), or a range of size 0 when the device is out of memory.
    address_range map(address_range range);
    // Releases the pages lying entirely inside `range`; returns what was unmapped (maybe nothing).
    address_range unmap(address_range range);

    device_address ptr() const { return base_; }
    uint64_t size() const { return page_size_ * max_pages_; }
    stream_handle stream() const { return stream_; }

  private:
    uint64_t page_left(device_address p) const { return (p - base_) / page_size_; }
    uint64_t page_right(device_address p) const {
        return (p - base_ + page_size_ - 1) / page_size_;
    }
    address_range range_of_pages(uint64_t begin, uint64_t end) const {
        return {base_ + page_size_ * begin, page_size_ * (end - begin)};
    }
    void unmap_pages(uint64_t begin, uint64_t end);
    void trim_handles();

    device& device_;
    stream_handle stream_;
    uint64_t page_size_;
    uint64_t max_pages_;
    device_address base_ = 0;
    std::vector<std::optional<physical_handle>> handles_;
};

}  // namespace memtrail::detail

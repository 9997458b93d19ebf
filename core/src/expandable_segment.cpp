#include "detail/expandable_segment.hpp"

namespace memtrail::detail {

expandable_segment::expandable_segment(device& dev, stream_handle stream, uint64_t page_size,
                                       uint64_t max_pages)
    : device_(dev), stream_(stream), page_size_(page_size), max_pages_(max_pages) {
    if (dev.reserve_address_range(page_size_ * max_pages_, base_) != device_status::ok) {
        throw device_error("memtrail: could not reserve " +
                           std::to_string(page_size_ * max_pages_) +
                           " bytes of address space for an expandable segment");
    }
}

expandable_segment::~expandable_segment() {
    // Unmap whatever is still mapped, one contiguous run at a time.
    uint64_t i = 0;
    while (i < handles_.size()) {
        if (!handles_[i]) {
            ++i;
            continue;
        }
        uint64_t end = i;
        while (end < handles_.size() && handles_[end]) {
            ++end;
        }
        unmap_pages(i, end);
        i = end;
    }
    device_.release_address_range(base_, page_size_ * max_pages_);
}

address_range expandable_segment::map(address_range range) {
    const uint64_t begin = page_left(range.ptr);
    const uint64_t end = page_right(range.ptr + range.size);
    if (begin == end) {
        return range_of_pages(begin, end);
    }
    if (end > handles_.size()) {
        handles_.resize(end);
    }
    for (uint64_t i = begin; i < end; ++i) {
        physical_handle handle = 0;
        if (device_.create_physical(page_size_, handle) != device_status::ok) {
            // Give back the pages created so far: a failed map leaves nothing behind.
            for (uint64_t j = begin; j < i; ++j) {
                device_.release_physical(*handles_[j]);
                handles_[j].reset();
            }
            trim_handles();
            return range_of_pages(begin, begin);
        }
        handles_[i] = handle;
    }
    for (uint64_t i = begin; i < end; ++i) {
        device_.map(base_ + i * page_size_, page_size_, *handles_[i]);
    }
    device_.set_access(base_ + begin * page_size_, (end - begin) * page_size_);
    return range_of_pages(begin, end);
}

address_range expandable_segment::unmap(address_range range) {
    const uint64_t begin = page_right(range.ptr);
    const uint64_t end = page_left(range.ptr + range.size);
    if (begin >= end) {
        return {range.ptr, 0};
    }
    unmap_pages(begin, end);
    return range_of_pages(begin, end);
}

void expandable_segment::unmap_pages(uint64_t begin, uint64_t end) {
    // Unmapping does not wait for the GPU, so the stream's work must be finished first.
    device_.synchronize_stream(stream_);
    for (uint64_t i = begin; i < end; ++i) {
        device_.unmap(base_ + i * page_size_, page_size_);
        device_.release_physical(*handles_[i]);
        handles_[i].reset();
    }
    trim_handles();
}

void expandable_segment::trim_handles() {
    while (!handles_.empty() && !handles_.back()) {
        handles_.pop_back();
    }
}

}  // namespace memtrail::detail

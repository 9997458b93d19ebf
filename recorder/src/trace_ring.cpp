#include "detail/trace_ring.hpp"

#include <algorithm>
#include <new>

namespace memtrail::recorder::detail {

// A new chunk, or no room at all. The last chunk is only as long as the capacity needs.
trace_record* trace_ring::next_slot_rare_locked() {
    if (capacity_ == 0) {
        return nullptr;
    }
    const size_t length = std::min(chunk_size, capacity_ - size_);
    chunks_.emplace_back(static_cast<trace_record*>(::operator new(length * sizeof(trace_record))));
    return &at(size_++);
}

void trace_ring::copy_oldest_first_locked(trace_record* out) const {
    // Until the ring is full, next_ is 0 and the entries are in order.
    for (size_t i = 0, index = next_; i < size_; ++i) {
        out[i] = at(index);
        index = index + 1 == size_ ? 0 : index + 1;
    }
}

void trace_ring::set_capacity(size_t capacity) {
    std::lock_guard guard(lock_);
    if (capacity == capacity_) {
        return;
    }
    std::vector<trace_record> ordered(size_);
    copy_oldest_first_locked(ordered.data());
    const size_t kept = std::min(ordered.size(), capacity);
    chunks_.clear();
    size_ = 0;
    next_ = 0;
    capacity_ = capacity;
    for (size_t i = ordered.size() - kept; i < ordered.size(); ++i) {
        *next_slot_locked() = ordered[i];
    }
}

void trace_ring::clear() {
    std::lock_guard guard(lock_);
    size_ = 0;
    next_ = 0;
    cleared_at_ = end_;
}

trace_ring::contents trace_ring::copy(uint64_t cut) const {
    uint64_t next = 0;  // the next entry to copy
    uint64_t end = 0;   // one past the last
    uint64_t cleared_at = 0;
    {
        std::lock_guard guard(lock_);
        next = oldest_locked();
        end = std::min(cut, end_);
        cleared_at = cleared_at_;
    }
    contents out;
    // What the cut keeps but the ring no longer holds (nothing when it was cleared after the cut).
    out.dropped = std::max(std::min(next, end), cleared_at) - cleared_at;
    // Allocated and faulted in before taking the lock, which every recorded event waits for.
    out.records.reserve(end > next ? end - next : 0);
    while (next < end) {
        std::lock_guard guard(lock_);
        if (cleared_at_ != cleared_at) {
            out.dropped += end - next;  // cleared meanwhile: the rest is gone
            break;
        }
        const uint64_t oldest = std::min(oldest_locked(), end);
        if (oldest > next) {
            out.dropped += oldest - next;  // overwritten since the cut
            next = oldest;
        }
        const uint64_t batch_end = std::min(end, next + copy_batch);
        for (; next < batch_end; ++next) {
            out.records.push_back(entry_locked(next));
        }
    }
    return out;
}

}  // namespace memtrail::recorder::detail

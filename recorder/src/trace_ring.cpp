#include "detail/trace_ring.hpp"

#include <algorithm>
#include <new>

namespace memtrail::recorder::detail {

// A new chunk, or no room at all. The last chunk is only as long as the capacity needs.
trace_record* trace_ring::next_slot_rare_locked() {
    if (capacity_ == 0) {
        ++dropped_;
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
    dropped_ += ordered.size() - kept;
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
    dropped_ = 0;
}

trace_ring::contents trace_ring::copy() const {
    size_t size = 0;
    {
        std::lock_guard guard(lock_);
        size = size_;
    }
    // Allocated and faulted in before taking the lock, which every recorded event waits for;
    // the margin covers a ring that fills on meanwhile.
    contents out;
    out.records.reserve(size + chunk_size);
    out.records.resize(size);
    std::lock_guard guard(lock_);
    out.records.resize(size_);
    copy_oldest_first_locked(out.records.data());
    out.dropped = dropped_;
    return out;
}

}  // namespace memtrail::recorder::detail

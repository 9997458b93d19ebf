#include "detail/trace_ring.hpp"

#include <algorithm>

namespace memtrail::recorder::detail {

void trace_ring::push(trace_record record) {
    std::lock_guard lock(mutex_);
    record.time_ns = std::max(record.time_ns, last_time_ns_);
    last_time_ns_ = record.time_ns;
    if (records_.size() < capacity_) {
        records_.push_back(record);
        return;
    }
    if (capacity_ == 0) {
        ++dropped_;
        return;
    }
    records_[next_] = record;
    next_ = next_ + 1 == capacity_ ? 0 : next_ + 1;
    ++dropped_;
}

std::vector<trace_record> trace_ring::oldest_first_locked() const {
    std::vector<trace_record> ordered;
    ordered.reserve(records_.size());
    const auto split = records_.begin() + static_cast<ptrdiff_t>(next_);
    ordered.insert(ordered.end(), split, records_.end());
    ordered.insert(ordered.end(), records_.begin(), split);
    return ordered;
}

void trace_ring::set_capacity(size_t capacity) {
    std::lock_guard lock(mutex_);
    if (capacity == capacity_) {
        return;
    }
    std::vector<trace_record> ordered = oldest_first_locked();
    if (ordered.size() > capacity) {
        dropped_ += ordered.size() - capacity;
        ordered.erase(ordered.begin(), ordered.end() - static_cast<ptrdiff_t>(capacity));
    }
    records_ = std::move(ordered);
    next_ = 0;
    capacity_ = capacity;
}

void trace_ring::clear() {
    std::lock_guard lock(mutex_);
    records_.clear();
    next_ = 0;
    dropped_ = 0;
}

trace_ring::contents trace_ring::copy() const {
    std::lock_guard lock(mutex_);
    return {oldest_first_locked(), dropped_};
}

}  // namespace memtrail::recorder::detail

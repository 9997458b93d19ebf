#include "detail/trace_ring.hpp"

#include <algorithm>

namespace memtrail::recorder::detail {

// A run ends at the end of its chunk, where the ring fills up and where it wraps around.
trace_record* trace_ring::next_slot_rare_locked() {
    if (capacity_ == 0) {
        return nullptr;
    }
    run_fills_ = size_ < capacity_;
    const size_t first = run_fills_ ? size_ : next_;
    if (first / chunk_entries == chunks_.size()) {
        chunks_.emplace_back(static_cast<trace_record*>(map_huge_pages(huge_page_bytes)));
    }
    const size_t chunk_end = (first / chunk_entries + 1) * chunk_entries;
    run_next_ = &at(first);
    run_end_ = run_next_ + (std::min(chunk_end, capacity_) - first);
    return next_slot_locked();
}

void trace_ring::copy_oldest_first_locked(trace_record* out) const {
    // Until the ring is full, next_ is 0 and the entries are in order.
    for (size_t i = 0, index = next_; i < size_; ++i) {
        out[i] = at(index);
        index = index + 1 == size_ ? 0 : index + 1;
    }
}

void trace_ring::set_capacity(size_t capacity) {
    if (capacity == capacity_) {
        return;
    }
    std::vector<trace_record> ordered(size_);
    copy_oldest_first_locked(ordered.data());
    const size_t kept = std::min(ordered.size(), capacity);
    chunks_.clear();
    forget_run();
    size_ = 0;
    next_ = 0;
    capacity_ = capacity;
    for (size_t i = ordered.size() - kept; i < ordered.size(); ++i) {
        *next_slot_locked() = ordered[i];
    }
}

void trace_ring::clear() {
    forget_run();
    size_ = 0;
    next_ = 0;
    cleared_at_ = end_;
}

trace_ring::contents trace_ring::copy(uint64_t cut, const under_writers_lock& lock,
                                      uint64_t from) const {
    uint64_t first = 0;  // the oldest entry to copy
    uint64_t end = 0;    // one past the newest
    uint64_t cleared_at = 0;
    lock([&] {
        end = std::min(cut, end_);
        first = std::min(std::max(oldest_locked(), from), end);
        cleared_at = cleared_at_;
    });
    contents out;
    // Allocated and faulted in before taking the lock again, which every recorded event waits for.
    out.records.resize(end - first);
    // Newest first, a batch per hold of the lock: entries pushed meanwhile replace the oldest, so
    // a copy they overtake keeps the newest part whole and stops where they reached. What it
    // returns is always one run of entries ending at the cut.
    uint64_t kept_from = first;
    for (uint64_t high = end; high > first;) {
        bool stop = false;
        lock([&] {
            if (cleared_at_ != cleared_at) {
                kept_from = high;  // cleared meanwhile: the older entries are gone
                stop = true;
                return;
            }
            const uint64_t low = high - first > copy_batch ? high - copy_batch : first;
            const uint64_t held_from = std::max(low, std::min(oldest_locked(), high));
            for (uint64_t sequence = held_from; sequence < high; ++sequence) {
                out.records[sequence - first] = entry_locked(sequence);
            }
            if (held_from > low) {
                kept_from = held_from;  // overwritten since the cut
                stop = true;
            }
            high = low;
        });
        if (stop) {
            break;
        }
    }
    out.records.erase(out.records.begin(),
                      out.records.begin() + static_cast<ptrdiff_t>(kept_from - first));
    // What the cut keeps but the ring no longer holds (nothing when it was cleared after the cut).
    // Entries before `from` were not asked for, so they are not counted either.
    const uint64_t counted_from = std::max(cleared_at, std::min(from, end));
    out.dropped = std::max(kept_from, counted_from) - counted_from;
    return out;
}

}  // namespace memtrail::recorder::detail

#pragma once
// One device's event history: a bounded ring of compact entries. When full, each new entry
// overwrites the oldest and the loss is counted. Written from the allocator's observer (under
// the device lock) and from annotation calls (without it), so it has its own lock, a spin lock:
// a push holds it for a few stores.
//
// The entries live in fixed-size chunks allocated as the ring first fills: growing never copies
// what is recorded (a vector doubling to a million entries moves and faults in twice the memory),
// and a ring that records little uses little.

#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

#include "detail/spin_lock.hpp"

namespace memtrail::recorder::detail {

struct trace_record {
    uint64_t address = 0;
    uint64_t size = 0;
    uint64_t stream = 0;
    int64_t time_ns = 0;
    uint32_t stack = 0;     // stack_table id
    uint32_t thread = 0;    // thread_identity number
    uint32_t metadata = 0;  // label id of the thread's metadata
    uint32_t name = 0;      // label id of an annotation's name
    uint8_t action = 0;     // memtrail::snapshot::action
    int8_t device = 0;
};
static_assert(sizeof(trace_record) == 56, "trace_record grew: the history costs memory per entry");

class trace_ring {
  public:
    // Appends `record`, with its time raised to the previous entry's if it is earlier: the ring's
    // order is the order of events, and times taken before waiting for a lock may not be.
    void push(const trace_record& record) {
        std::lock_guard guard(lock_);
        trace_record* slot = next_slot_locked();
        if (slot == nullptr) {
            return;
        }
        *slot = record;
        if (slot->time_ns < last_time_ns_) {
            slot->time_ns = last_time_ns_;
        }
        last_time_ns_ = slot->time_ns;
    }
    // Keeps at most `capacity` entries from now on (the newest, when shrinking).
    void set_capacity(size_t capacity);
    void clear();

    struct contents {
        std::vector<trace_record> records;  // oldest first
        uint64_t dropped = 0;
    };
    contents copy() const;

  private:
    static constexpr size_t chunk_bits = 14;  // 16,384 entries, 896 KiB
    static constexpr size_t chunk_size = size_t{1} << chunk_bits;

    // Chunks are left uninitialized: every slot is written before it is read, and zeroing it
    // first would write the history twice. (trace_record is an aggregate, so its objects begin
    // to exist in the storage as it is written.)
    struct chunk_deleter {
        void operator()(trace_record* chunk) const { ::operator delete(chunk); }
    };
    using chunk = std::unique_ptr<trace_record[], chunk_deleter>;

    const trace_record& at(size_t index) const {
        return chunks_[index >> chunk_bits][index & (chunk_size - 1)];
    }
    trace_record& at(size_t index) {
        return chunks_[index >> chunk_bits][index & (chunk_size - 1)];
    }

    // Where the next entry goes: a free slot, else the oldest entry, counted as dropped.
    // nullptr (and a dropped entry) when the capacity is 0.
    trace_record* next_slot_locked() {
        if (size_ == capacity_ && capacity_ != 0) {
            trace_record* oldest = &at(next_);
            next_ = next_ + 1 == capacity_ ? 0 : next_ + 1;
            ++dropped_;
            return oldest;
        }
        if (size_ < capacity_ && (size_ >> chunk_bits) < chunks_.size()) {
            return &at(size_++);
        }
        return next_slot_rare_locked();
    }
    trace_record* next_slot_rare_locked();
    void copy_oldest_first_locked(trace_record* out) const;

    mutable spin_lock lock_;
    std::vector<chunk> chunks_;
    size_t size_ = 0;  // entries held, up to capacity_
    size_t next_ = 0;  // where the next entry goes once full: the oldest
    size_t capacity_ = 0;
    uint64_t dropped_ = 0;
    int64_t last_time_ns_ = 0;
};

}  // namespace memtrail::recorder::detail

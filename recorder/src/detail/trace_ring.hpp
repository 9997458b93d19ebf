#pragma once
// One device's event history: a bounded ring of compact entries. When full, each new entry
// overwrites the oldest and the loss is counted. Every access holds the device's lock, which the
// allocator's observer (every push but annotations) runs under already: annotations, resizing
// and each batch of a snapshot's copy take it too (device_allocator::run_under_lock), so the ring
// has no lock of its own, and a push is a few stores (a lock of its own cost an atomic exchange
// per entry, three per allocation and free).
//
// The entries live in fixed-size chunks allocated as the ring first fills: growing never copies
// what is recorded (a vector doubling to a million entries moves and faults in twice the memory),
// and a ring that records little uses little. A chunk is one huge page (huge_pages.hpp): a push
// then rarely waits on a page walk.
//
// Every entry has a sequence number, its position among all entries pushed. A snapshot cuts the
// ring at one (end() read when the allocator's state is copied) and copies the entries before it
// in short batches, newest first, so recording threads wait for one batch at a time, never for
// the whole ring, and what the copy returns is one run of entries ending at the cut.

#include <cstddef>
#include <cstdint>
#include <functional>
#include <limits>
#include <memory>
#include <vector>

#include "memtrail/stacks/huge_pages.hpp"

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
    // Entries a chunk holds: as many as one huge page has room for (37,449).
    static constexpr size_t chunk_entries = huge_page_bytes / sizeof(trace_record);

    // Appends `record`, with its time raised to the previous entry's if it is earlier: the ring's
    // order is the order of events, and times taken before waiting for a lock may not be.
    // Returns end() just after the entry: the cut that ends with it.
    uint64_t push(const trace_record& record) {
        return push_filled([&](trace_record& slot) { slot = record; });
    }
    // The same, with the entry written in place by `fill(trace_record&)`: a record built on the
    // stack first and copied was written field by field and read back sixteen bytes at a time,
    // which waits for the stores to land (a store-forwarding stall on every recorded event).
    template <typename Fill>
    uint64_t push_filled(Fill&& fill) {
        ++end_;
        trace_record* slot = next_slot_locked();
        if (slot == nullptr) {
            return end_;
        }
        fill(*slot);
        if (slot->time_ns < last_time_ns_) {
            slot->time_ns = last_time_ns_;
        }
        last_time_ns_ = slot->time_ns;
        // The next entry's line, asked for now while the caches still hold the ring's state.
        __builtin_prefetch(reinterpret_cast<const char*>(run_next_) + sizeof(trace_record) - 1, 1);
        return end_;
    }
    // Keeps at most `capacity` entries from now on (the newest, when shrinking).
    void set_capacity(size_t capacity);
    void clear();

    // The sequence number the next entry will have: the cut that keeps everything pushed so far.
    uint64_t end() const { return end_; }

    struct contents {
        std::vector<trace_record> records;  // oldest first
        uint64_t dropped = 0;               // entries before the cut that are no longer held
    };
    // Runs a function holding the device's lock (the writers' lock).
    using under_writers_lock = std::function<void(const std::function<void()>&)>;
    // The entries from `from` to before `cut` still held, oldest first, read in batches under
    // `lock`. Entries pushed meanwhile overwrite the oldest when the ring is full: those are
    // counted as dropped, never mixed in. A live subscriber (`from` its last end) learns from
    // `dropped` that the ring overtook it.
    contents copy(uint64_t cut, const under_writers_lock& lock, uint64_t from = 0) const;

  private:
    // Entries a snapshot copies per hold of the lock (224 KiB).
    static constexpr size_t copy_batch = 4096;

    // A chunk's entries are not constructed: every slot is written before it is read.
    // (trace_record is an aggregate, so its objects begin to exist in the storage as it is
    // written.)
    struct chunk_deleter {
        void operator()(trace_record* chunk) const { unmap_huge_pages(chunk, huge_page_bytes); }
    };
    using chunk = std::unique_ptr<trace_record[], chunk_deleter>;

    const trace_record& at(size_t index) const {
        return chunks_[index / chunk_entries][index % chunk_entries];
    }
    trace_record& at(size_t index) { return chunks_[index / chunk_entries][index % chunk_entries]; }

    // Where the next entry goes: a free slot, else the oldest entry (dropped). nullptr when the
    // capacity is 0 (the entry itself is dropped).
    trace_record* next_slot_locked() {
        if (run_next_ != run_end_) [[likely]] {
            if (run_fills_) {
                ++size_;
            } else {
                next_ = next_ + 1 == capacity_ ? 0 : next_ + 1;
            }
            return run_next_++;
        }
        return next_slot_rare_locked();
    }
    // Starts the next run of slots (allocating its chunk), and takes its first.
    trace_record* next_slot_rare_locked();
    void forget_run() { run_next_ = run_end_ = nullptr; }
    void copy_oldest_first_locked(trace_record* out) const;
    // The sequence number of the oldest entry held.
    uint64_t oldest_locked() const { return end_ - size_; }
    // The entry with sequence number `sequence`, which must be held.
    const trace_record& entry_locked(uint64_t sequence) const {
        const size_t offset = next_ + static_cast<size_t>(sequence - oldest_locked());
        return at(offset < size_ ? offset : offset - size_);
    }

    std::vector<chunk> chunks_;
    // The slots the next entries go to, in one chunk, and whether they add to the entries held
    // (the ring is filling) or replace the oldest: a push takes one without reading chunks_,
    // a line more to wait for when other work took the caches.
    trace_record* run_next_ = nullptr;
    trace_record* run_end_ = nullptr;
    bool run_fills_ = false;
    size_t size_ = 0;  // entries held, up to capacity_
    size_t next_ = 0;  // where the next entry goes once full: the oldest
    size_t capacity_ = 0;
    // Sequence numbers: end_ is the next entry's, cleared_at_ the first after the last clear().
    // The entries dropped since then are those before the oldest held: oldest_locked() -
    // cleared_at_.
    uint64_t end_ = 0;
    uint64_t cleared_at_ = 0;
    int64_t last_time_ns_ = 0;
};

}  // namespace memtrail::recorder::detail

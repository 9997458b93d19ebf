#pragma once
// One device's event history: a bounded ring of compact entries. When full, each new entry
// overwrites the oldest and the loss is counted. Written from the allocator's observer (under
// the device lock) and from annotation calls (without it), so it has its own lock.

#include <cstdint>
#include <mutex>
#include <vector>

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
    void push(trace_record record);
    // Keeps at most `capacity` entries from now on (the newest, when shrinking).
    void set_capacity(size_t capacity);
    void clear();

    struct contents {
        std::vector<trace_record> records;  // oldest first
        uint64_t dropped = 0;
    };
    contents copy() const;

  private:
    std::vector<trace_record> oldest_first_locked() const;

    mutable std::mutex mutex_;
    std::vector<trace_record> records_;  // grows up to capacity_, then wraps
    size_t next_ = 0;                    // where the next entry goes once full
    size_t capacity_ = 0;
    uint64_t dropped_ = 0;
    int64_t last_time_ns_ = 0;
};

}  // namespace memtrail::recorder::detail

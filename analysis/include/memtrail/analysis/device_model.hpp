#pragma once
// One device's trace made queryable: the allocator state after any number of entries, the
// memory curves over the whole trace, and the life of every allocation.
//
// The trace need not start from an empty allocator, and entries may have been dropped: like
// PyTorch's memory_viz, the model walks back from the snapshot's final segments to the state
// before the first entry, then replays forwards. A PyTorch trace records requests, not block
// sizes, so block sizes come from the allocator's rounding and splitting rules applied to the
// free range each allocation lands in.
//
// Building replays the trace once and keeps a copy of the state every few thousand entries, so
// state_after() replays at most one interval. A built model is immutable and cheap to copy
// (shared); it keeps the snapshot alive.

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "memtrail/analysis/memory_state.hpp"
#include "memtrail/snapshot/model.hpp"

namespace memtrail::analysis {

// Positions count applied entries: position 0 is the state before the first entry, position
// event_count() the state after the last. The state "at entry k" is position k + 1.

// One allocation's life, in positions.
struct allocation_lifetime {
    uint64_t address = 0;
    uint64_t size = 0;  // block size
    uint64_t requested_size = 0;
    snapshot::stack_id stack = snapshot::no_id;
    size_t begin = 0;     // after its alloc entry; 0 when allocated before the trace
    size_t end = 0;       // after its free_requested entry; event_count() when never freed
    size_t released = 0;  // after its free_completed entry (end of pending free)
    bool from_before_trace = false;
};

// The three curves the model keeps for every position.
enum class series {
    allocated,  // bytes in blocks callers hold (PyTorch's allocated_bytes)
    active,     // allocated plus pending-free blocks (active_bytes)
    reserved,   // bytes in segments (reserved_bytes)
};

// One entry's effect on the state, as for_each_change reports it.
struct state_change {
    size_t entry = 0;  // index of the trace entry
    int64_t allocated = 0;
    int64_t active = 0;
    int64_t reserved = 0;
    int64_t requested = 0;
    snapshot::stack_id stack = snapshot::no_id;  // allocation stack of the block concerned
    uint64_t block_size = 0;
};

// How well the trace fits the snapshot.
struct reconstruction_report {
    size_t anomalies = 0;      // entries that did not fit the state (dropped or reordered entries)
    size_t first_anomaly = 0;  // index of the first such entry, when anomalies > 0
    // Whether replaying to the end gives the snapshot's own segments and blocks.
    bool matches_final_segments = true;
    std::string first_difference;  // what differs first, when it does not
};

struct model_options {
    // A state copy is kept at least this many entries apart, and at least four times as many
    // as the state has blocks and segments, so copies never take more memory than the trace.
    size_t checkpoint_interval = 8192;
};

class device_model {
  public:
    // Builds the model of `device`'s trace and segments in `source`. A device without a trace
    // gives a model with no entries whose only state is the snapshot's segments.
    static device_model build(std::shared_ptr<const snapshot::snapshot> source, int device,
                              const model_options& options = {});

    const snapshot::snapshot& source() const;
    int device() const;
    size_t event_count() const;
    const snapshot::trace_entry& entry(size_t index) const;

    // The state after the first `position` entries; position is clamped to event_count().
    memory_state state_after(size_t position) const;

    // values(s)[p] is the curve at position p (event_count() + 1 values).
    const std::vector<uint64_t>& values(series s) const;
    // Smallest and largest value over positions [first, last); {0, 0} when empty.
    std::pair<uint64_t, uint64_t> min_max(series s, size_t first, size_t last) const;
    // The first position where the curve is highest.
    size_t peak_position(series s) const;

    // Time of the last entry applied at `position` (the first entry's time at position 0).
    int64_t time_at(size_t position) const;
    // The number of entries recorded at or before `time_ns`.
    size_t position_at_time(int64_t time_ns) const;

    // In order of begin: the blocks live before the trace, then one per alloc entry that took
    // effect, in trace order.
    const std::vector<allocation_lifetime>& lifetimes() const;
    const reconstruction_report& report() const;

    // Calls `visit` for each entry in [first_entry, last_entry) with its effect.
    void for_each_change(size_t first_entry, size_t last_entry,
                         const std::function<void(const state_change&)>& visit) const;

    struct impl;

  private:
    explicit device_model(std::shared_ptr<const impl> state) : impl_(std::move(state)) {}
    std::shared_ptr<const impl> impl_;
};

// The devices a snapshot has segments or trace entries for (other than the snapshot's own
// marks), ascending.
std::vector<int> devices_of(const snapshot::snapshot& source);

}  // namespace memtrail::analysis

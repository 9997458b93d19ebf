#pragma once
// A running process's recording as an attached viewer receives it (docs/live.md): a full
// snapshot to start from, then the event stream appended to its traces. The stream carries trace
// entries only, so the allocator's state comes from the process's state snapshots: cut() puts
// one together with the trace through that snapshot's ends, so that the segments are the state
// the trace leads to (what a full snapshot taken at that moment would hold).

#include <cstdint>
#include <optional>
#include <stdexcept>
#include <vector>

#include "memtrail/snapshot/model.hpp"

namespace memtrail::viewer {

// Events that do not follow what was received (a gap or an overlap in the stream).
class live_stream_error : public std::runtime_error {
  public:
    using std::runtime_error::runtime_error;
};

class live_trace {
  public:
    // Starts again from `full` (a full snapshot whose device d's trace ends at sequence number
    // ends[d]): the first snapshot after attaching, or the one sent after falling behind.
    void start(snapshot::snapshot full, const std::vector<uint64_t>& ends);

    /// Appends device `device`'s entries `from` to `next` - 1, as an events frame carries them
    /// (`events`: a snapshot holding only those entries and their stacks).
    /// @throws live_stream_error when `from` is not where the received trace ends, or the frame
    ///         holds another number of entries.
    void append(const snapshot::snapshot& events, int device, uint64_t from, uint64_t next);

    // Whether every device's entries up to `ends` (sequence numbers, one per device) are here.
    bool holds_through(const std::vector<uint64_t>& ends) const;

    // The recording at the cut of `state` (a state snapshot, whose device d's trace ended at
    // ends[d]): its header, statistics and segments with the trace up to `ends`. nullopt when
    // the entries up to `ends` are not all here, or the trace starts after them (the stream
    // started again from a later snapshot).
    std::optional<snapshot::snapshot> cut(const snapshot::snapshot& state,
                                          const std::vector<uint64_t>& ends) const;

    // By device: the sequence number after the last entry received.
    const std::vector<uint64_t>& received_ends() const { return ends_; }

  private:
    snapshot::snapshot recording_;
    std::vector<uint64_t> firsts_;  // by device: the sequence number of the trace's first entry
    std::vector<uint64_t> ends_;    // by device: the sequence number after the last received
};

}  // namespace memtrail::viewer

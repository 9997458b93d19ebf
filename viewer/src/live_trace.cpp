#include "memtrail/viewer/live_trace.hpp"

#include <string>
#include <unordered_map>

namespace memtrail::viewer {

namespace {

// Copies strings, frames and stacks of one snapshot into another's tables: each received
// snapshot interns them afresh, so their ids mean nothing in the recording.
class interner {
  public:
    interner(const snapshot::snapshot& from, snapshot::snapshot& into) : from_(from), into_(into) {}

    snapshot::string_id string(snapshot::string_id id) {
        return id == snapshot::no_id ? id : into_.intern_string(from_.string_at(id));
    }

    snapshot::stack_id stack(snapshot::stack_id id) {
        if (id == snapshot::no_id) {
            return id;
        }
        if (const auto known = stacks_.find(id); known != stacks_.end()) {
            return known->second;
        }
        std::vector<snapshot::frame_id> frames;
        for (const snapshot::frame_id f : from_.stack_at(id)) {
            snapshot::frame copy = from_.frame_at(f);
            copy.function = string(copy.function);
            copy.filename = string(copy.filename);
            copy.module = string(copy.module);
            copy.build_id = string(copy.build_id);
            frames.push_back(into_.intern_frame(copy));
        }
        const snapshot::stack_id interned = into_.intern_stack(frames);
        stacks_.emplace(id, interned);
        return interned;
    }

    snapshot::trace_entry entry(snapshot::trace_entry e) {
        e.stack = stack(e.stack);
        e.user_metadata = string(e.user_metadata);
        e.compile_context = string(e.compile_context);
        e.name = string(e.name);
        return e;
    }

  private:
    const snapshot::snapshot& from_;
    snapshot::snapshot& into_;
    std::unordered_map<snapshot::stack_id, snapshot::stack_id> stacks_;
};

size_t trace_size(const snapshot::snapshot& s, int device) {
    const snapshot::device_trace* trace = s.find_trace(device);
    return trace == nullptr ? 0 : trace->entries.size();
}

}  // namespace

void live_trace::start(snapshot::snapshot full, const std::vector<uint64_t>& ends) {
    recording_ = std::move(full);
    ends_ = ends;
    firsts_.assign(ends.size(), 0);
    for (size_t d = 0; d < ends.size(); ++d) {
        const size_t held = trace_size(recording_, static_cast<int>(d));
        firsts_[d] = ends[d] >= held ? ends[d] - held : 0;
    }
}

void live_trace::append(const snapshot::snapshot& events, int device, uint64_t from,
                        uint64_t next) {
    const size_t d = static_cast<size_t>(device);
    if (device < 0 || d >= ends_.size()) {
        throw live_stream_error("events of device " + std::to_string(device) +
                                ", which the process did not announce (it has " +
                                std::to_string(ends_.size()) + ")");
    }
    if (from != ends_[d]) {
        throw live_stream_error("events of device " + std::to_string(device) + " from " +
                                std::to_string(from) + " do not follow the " +
                                std::to_string(ends_[d]) + " received");
    }
    const snapshot::device_trace* received = events.find_trace(device);
    const size_t count = received == nullptr ? 0 : received->entries.size();
    if (next < from || count != next - from) {
        throw live_stream_error("an events frame of device " + std::to_string(device) +
                                " says entries " + std::to_string(from) + " to " +
                                std::to_string(next) + " but holds " + std::to_string(count));
    }
    if (count == 0) {
        return;
    }
    interner into(events, recording_);
    std::vector<snapshot::trace_entry>& entries = recording_.trace_for(device).entries;
    for (const snapshot::trace_entry& e : received->entries) {
        entries.push_back(into.entry(e));
    }
    ends_[d] = next;
}

bool live_trace::holds_through(const std::vector<uint64_t>& ends) const {
    for (size_t d = 0; d < ends.size(); ++d) {
        if (d >= ends_.size() ? ends[d] != 0 : ends_[d] < ends[d]) {
            return false;
        }
    }
    return true;
}

std::optional<snapshot::snapshot> live_trace::cut(const snapshot::snapshot& state,
                                                  const std::vector<uint64_t>& ends) const {
    if (!holds_through(ends)) {
        return std::nullopt;
    }
    for (size_t d = 0; d < ends.size() && d < firsts_.size(); ++d) {
        if (ends[d] < firsts_[d]) {
            return std::nullopt;
        }
    }
    snapshot::snapshot out = recording_;
    for (snapshot::device_trace& trace : out.traces) {
        const size_t d = static_cast<size_t>(trace.device);
        if (d < ends.size() && d < firsts_.size()) {
            trace.entries.resize(static_cast<size_t>(ends[d] - firsts_[d]));
        }
    }
    out.info = state.info;
    out.settings = state.settings;
    out.stats = state.stats;
    // The outside-allocator section stays the first snapshot's: its ids are the recording's.
    interner into(state, out);
    out.segments = state.segments;
    for (snapshot::segment& s : out.segments) {
        s.stack = into.stack(s.stack);
        for (snapshot::block& b : s.blocks) {
            b.stack = into.stack(b.stack);
        }
    }
    return out;
}

}  // namespace memtrail::viewer

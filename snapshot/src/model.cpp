#include "memtrail/snapshot/model.hpp"

#include <algorithm>
#include <array>
#include <functional>
#include <utility>

namespace memtrail::snapshot {

namespace {

// Indexed by the enum's value; the order must follow `action`.
constexpr std::array<std::string_view, action_count> action_names = {
    "alloc",        "free_requested", "free_completed", "segment_alloc",
    "segment_free", "segment_map",    "segment_unmap",  "snapshot",
    "oom",          "user_start",     "user_end",       "user_marker",
};

constexpr std::array<std::string_view, 3> block_state_names = {
    "active_allocated",
    "active_pending_free",
    "inactive",
};

// boost::hash_combine's mixing step: cheap and good enough for the interning tables.
void hash_combine(size_t& seed, size_t value) {
    seed ^= value + 0x9e3779b97f4a7c15ull + (seed << 6) + (seed >> 2);
}

}  // namespace

std::string_view action_name(action a) {
    const auto index = static_cast<size_t>(a);
    return index < action_names.size() ? action_names[index] : std::string_view("unknown");
}

bool parse_action(std::string_view name, action& out) {
    const auto it = std::find(action_names.begin(), action_names.end(), name);
    if (it == action_names.end()) {
        return false;
    }
    out = static_cast<action>(it - action_names.begin());
    return true;
}

std::string_view block_state_name(block_state s) {
    const auto index = static_cast<size_t>(s);
    return index < block_state_names.size() ? block_state_names[index]
                                            : std::string_view("unknown");
}

bool parse_block_state(std::string_view name, block_state& out) {
    const auto it = std::find(block_state_names.begin(), block_state_names.end(), name);
    if (it == block_state_names.end()) {
        return false;
    }
    out = static_cast<block_state>(it - block_state_names.begin());
    return true;
}

snapshot::snapshot() {
    // Id 0 of every table is "none", so zero-initialised ids need no special case.
    strings_.emplace_back();
    string_index_.emplace(std::string(), no_id);
    frames_.emplace_back();
    frame_index_.emplace(frame{}, no_id);
    stacks_.emplace_back();
    stack_index_.emplace(std::vector<frame_id>{}, no_id);
}

string_id snapshot::intern_string(std::string_view s) {
    // Heterogeneous lookup needs a transparent hash; a temporary string keeps this simple and the
    // callers (readers, recorder symbolisation) are not on a hot path per byte.
    std::string key(s);
    const auto it = string_index_.find(key);
    if (it != string_index_.end()) {
        return it->second;
    }
    const auto id = static_cast<string_id>(strings_.size());
    strings_.push_back(key);
    string_index_.emplace(std::move(key), id);
    return id;
}

frame_id snapshot::intern_frame(const frame& f) {
    const auto it = frame_index_.find(f);
    if (it != frame_index_.end()) {
        return it->second;
    }
    const auto id = static_cast<frame_id>(frames_.size());
    frames_.push_back(f);
    frame_index_.emplace(f, id);
    return id;
}

stack_id snapshot::intern_stack(const std::vector<frame_id>& frames) {
    const auto it = stack_index_.find(frames);
    if (it != stack_index_.end()) {
        return it->second;
    }
    const auto id = static_cast<stack_id>(stacks_.size());
    stacks_.push_back(frames);
    stack_index_.emplace(frames, id);
    return id;
}

device_trace& snapshot::trace_for(int device) {
    for (auto& trace : traces) {
        if (trace.device == device) {
            return trace;
        }
    }
    auto& trace = traces.emplace_back();
    trace.device = static_cast<int8_t>(device);
    return trace;
}

const device_trace* snapshot::find_trace(int device) const {
    for (const auto& trace : traces) {
        if (trace.device == device) {
            return &trace;
        }
    }
    return nullptr;
}

bool snapshot::operator==(const snapshot& other) const {
    // The indexes are derived from the tables, so comparing the tables is enough.
    return info == other.info && settings == other.settings && stats == other.stats &&
           segments == other.segments && traces == other.traces &&
           annotations == other.annotations && outside == other.outside &&
           strings_ == other.strings_ && frames_ == other.frames_ && stacks_ == other.stacks_;
}

size_t snapshot::frame_hash::operator()(const frame& f) const {
    size_t seed = std::hash<uint32_t>{}(f.function);
    hash_combine(seed, f.filename);
    hash_combine(seed, f.line);
    hash_combine(seed, f.module);
    hash_combine(seed, std::hash<uint64_t>{}(f.module_offset));
    hash_combine(seed, f.build_id);
    hash_combine(seed, static_cast<size_t>(f.kind));
    return seed;
}

size_t snapshot::stack_hash::operator()(const std::vector<frame_id>& s) const {
    size_t seed = s.size();
    for (const frame_id id : s) {
        hash_combine(seed, id);
    }
    return seed;
}

}  // namespace memtrail::snapshot

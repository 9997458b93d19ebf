// The Perfetto protobuf trace of `memtrail export --format perfetto`. One packet sequence holds
// every packet: its first clears the incremental state, and every track event says it needs it.
// Each packet carries the interned entries it is the first to use, so each name, category,
// argument name and stack is written once, then referred to by its iid.
//
// Index of this file:
// [SECTION] protobuf encoding
// [SECTION] interning
// [SECTION] the writer
// [SECTION] slices on tracks
// [SECTION] the trace

#include "detail/perfetto_trace.hpp"

#include <algorithm>
#include <cstdint>
#include <functional>
#include <limits>
#include <queue>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "detail/common.hpp"
#include "memtrail/analysis/frame_text.hpp"
#include "memtrail/analysis/size_text.hpp"

namespace memtrail::cli {
namespace {

using snapshot::action;

//-------------------------------------------------------------------------------------------------
// [SECTION] protobuf encoding
//-------------------------------------------------------------------------------------------------

// Field numbers of Perfetto's protos (protos/perfetto/trace/...), the ones this writer uses.
namespace field {
constexpr uint32_t trace_packet = 1;  // Trace.packet
// TracePacket
constexpr uint32_t timestamp = 8;
constexpr uint32_t trusted_packet_sequence_id = 10;
constexpr uint32_t track_event = 11;
constexpr uint32_t interned_data = 12;
constexpr uint32_t sequence_flags = 13;
constexpr uint32_t track_descriptor = 60;
// TrackDescriptor, ProcessDescriptor, CounterDescriptor
constexpr uint32_t track_uuid = 1;
constexpr uint32_t track_name = 2;
constexpr uint32_t track_process = 3;
constexpr uint32_t track_parent_uuid = 5;
constexpr uint32_t track_counter = 8;
constexpr uint32_t process_pid = 1;
constexpr uint32_t process_name = 6;
constexpr uint32_t counter_unit = 3;
// TrackEvent
constexpr uint32_t event_category_iids = 3;
constexpr uint32_t event_debug_annotations = 4;
constexpr uint32_t event_type = 9;
constexpr uint32_t event_name_iid = 10;
constexpr uint32_t event_track_uuid = 11;
constexpr uint32_t event_counter_value = 30;
// DebugAnnotation
constexpr uint32_t annotation_name_iid = 1;
constexpr uint32_t annotation_bool_value = 2;
constexpr uint32_t annotation_uint_value = 3;
constexpr uint32_t annotation_pointer_value = 7;
constexpr uint32_t annotation_string_value_iid = 17;
// InternedData; each entry is {iid = 1, name (or str) = 2}
constexpr uint32_t interned_event_categories = 1;
constexpr uint32_t interned_event_names = 2;
constexpr uint32_t interned_debug_annotation_names = 3;
constexpr uint32_t interned_debug_annotation_string_values = 29;
constexpr uint32_t interned_iid = 1;
constexpr uint32_t interned_name = 2;
}  // namespace field

constexpr uint64_t seq_incremental_state_cleared = 1;  // TracePacket.SequenceFlags
constexpr uint64_t seq_needs_incremental_state = 2;
constexpr uint64_t type_slice_begin = 1;  // TrackEvent.Type
constexpr uint64_t type_slice_end = 2;
constexpr uint64_t type_instant = 3;
constexpr uint64_t type_counter = 4;
constexpr uint64_t unit_size_bytes = 3;  // CounterDescriptor.Unit
constexpr uint32_t sequence_id = 1;

// The bytes of one protobuf message, built field by field.
class proto_message {
  public:
    proto_message& varint(uint32_t number, uint64_t value) {
        raw_varint(uint64_t{number} << 3);  // wire type 0
        raw_varint(value);
        return *this;
    }
    proto_message& bytes(uint32_t number, std::string_view value) {
        raw_varint(uint64_t{number} << 3 | 2);  // wire type 2: length-delimited
        raw_varint(value.size());
        data_.append(value);
        return *this;
    }
    proto_message& message(uint32_t number, const proto_message& nested) {
        return bytes(number, nested.data_);
    }
    bool empty() const { return data_.empty(); }
    const std::string& data() const { return data_; }

  private:
    void raw_varint(uint64_t value) {
        for (; value >= 0x80; value >>= 7) {
            data_.push_back(static_cast<char>(value | 0x80));
        }
        data_.push_back(static_cast<char>(value));
    }
    std::string data_;
};

//-------------------------------------------------------------------------------------------------
// [SECTION] interning
//-------------------------------------------------------------------------------------------------

// One of the sequence's interning indices: iids from 1 in the order values are first used. A new
// value goes into `pending` (the InternedData of the packet about to be written) under `field`.
class interned_index {
  public:
    explicit interned_index(uint32_t field) : field_(field) {}

    uint64_t iid(std::string_view value, proto_message& pending) {
        const auto [it, added] = iids_.try_emplace(std::string(value), iids_.size() + 1);
        if (added) {
            pending.message(field_, proto_message()
                                        .varint(field::interned_iid, it->second)
                                        .bytes(field::interned_name, value));
        }
        return it->second;
    }

  private:
    uint32_t field_;
    std::unordered_map<std::string, uint64_t> iids_;
};

//-------------------------------------------------------------------------------------------------
// [SECTION] the writer
//-------------------------------------------------------------------------------------------------

// Track uuids: the device's process track, its counters and event tracks, then one per lane of
// allocation slices.
constexpr uint64_t process_track = 1;
constexpr uint64_t allocated_track = 2;
constexpr uint64_t active_track = 3;
constexpr uint64_t reserved_track = 4;
constexpr uint64_t annotations_track = 5;
constexpr uint64_t oom_track = 6;
constexpr uint64_t first_lane_track = 100;

class perfetto_writer {
  public:
    perfetto_writer(const analysis::device_model& model, std::ostream& out)
        : model_(model),
          source_(model.source()),
          out_(out),
          stack_iids_(source_.stacks().size(), 0) {}

    void describe_tracks(size_t lanes);
    void counter(uint64_t track, int64_t time_ns, uint64_t value) {
        event(time_ns, proto_message()
                           .varint(field::event_type, type_counter)
                           .varint(field::event_track_uuid, track)
                           .varint(field::event_counter_value, value));
    }
    void allocation_begins(const analysis::allocation_lifetime& life,
                           analysis::memory_category category, size_t lane, int64_t time_ns);
    void slice_ends(uint64_t track, int64_t time_ns) {
        event(time_ns, proto_message()
                           .varint(field::event_type, type_slice_end)
                           .varint(field::event_track_uuid, track));
    }
    // An annotation's start, end or marker; an OOM.
    void named(uint64_t track, uint64_t type, std::string_view name, int64_t time_ns) {
        proto_message e;
        e.varint(field::event_type, type)
            .varint(field::event_track_uuid, track)
            .varint(field::event_name_iid, names_.iid(name, pending_));
        event(time_ns, e);
    }

  private:
    void event(int64_t time_ns, const proto_message& track_event);
    void packet(proto_message& packet);
    proto_message track(uint64_t uuid, std::string_view name, uint64_t parent) const;
    proto_message uint_argument(std::string_view name, uint32_t kind, uint64_t value);
    uint64_t stack_iid(snapshot::stack_id stack);

    const analysis::device_model& model_;
    const snapshot::snapshot& source_;
    std::ostream& out_;
    proto_message pending_;  // interned entries the next packet is the first to use
    interned_index categories_{field::interned_event_categories};
    interned_index names_{field::interned_event_names};
    interned_index argument_names_{field::interned_debug_annotation_names};
    interned_index strings_{field::interned_debug_annotation_string_values};
    std::vector<uint64_t> stack_iids_;  // by stack id; 0 until first written
};

void perfetto_writer::packet(proto_message& packet) {
    packet.varint(field::trusted_packet_sequence_id, sequence_id);
    if (!pending_.empty()) {
        packet.message(field::interned_data, pending_);
        pending_ = proto_message();
    }
    const std::string bytes = proto_message().message(field::trace_packet, packet).data();
    out_.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

void perfetto_writer::event(int64_t time_ns, const proto_message& track_event) {
    proto_message p;
    p.varint(field::timestamp, static_cast<uint64_t>(std::max<int64_t>(time_ns, 0)))
        .message(field::track_event, track_event)
        .varint(field::sequence_flags, seq_needs_incremental_state);
    packet(p);
}

proto_message perfetto_writer::track(uint64_t uuid, std::string_view name, uint64_t parent) const {
    proto_message t;
    t.varint(field::track_uuid, uuid).bytes(field::track_name, name);
    if (parent != 0) {
        t.varint(field::track_parent_uuid, parent);
    }
    return t;
}

void perfetto_writer::describe_tracks(size_t lanes) {
    const int device = model_.device();
    const std::string process = "memtrail device " + std::to_string(device);
    proto_message first;
    first
        .message(field::track_descriptor,
                 track(process_track, process, 0)
                     .message(field::track_process,
                              proto_message()
                                  .varint(field::process_pid, static_cast<uint64_t>(device))
                                  .bytes(field::process_name, process)))
        .varint(field::sequence_flags, seq_incremental_state_cleared);
    packet(first);
    const proto_message in_bytes = proto_message().varint(field::counter_unit, unit_size_bytes);
    for (const auto& [uuid, name] :
         {std::pair{allocated_track, "allocated"}, std::pair{active_track, "active"},
          std::pair{reserved_track, "reserved"}}) {
        proto_message p;
        p.message(field::track_descriptor,
                  track(uuid, name, process_track).message(field::track_counter, in_bytes));
        packet(p);
    }
    for (const auto& [uuid, name] :
         {std::pair{annotations_track, "annotations"}, std::pair{oom_track, "out of memory"}}) {
        proto_message p;
        p.message(field::track_descriptor, track(uuid, name, process_track));
        packet(p);
    }
    for (size_t lane = 0; lane < lanes; ++lane) {
        proto_message p;
        p.message(field::track_descriptor,
                  track(first_lane_track + lane, "allocations " + std::to_string(lane + 1),
                        process_track));
        packet(p);
    }
}

uint64_t perfetto_writer::stack_iid(snapshot::stack_id stack) {
    if (stack >= stack_iids_.size()) {
        return strings_.iid(analysis::unknown_stack_label, pending_);
    }
    if (stack_iids_[stack] == 0) {
        std::string text;
        for (const snapshot::frame_id frame : source_.stack_at(stack)) {
            text += (text.empty() ? "" : "\n") + analysis::frame_label(source_, frame);
        }
        stack_iids_[stack] = strings_.iid(
            text.empty() ? std::string(analysis::unknown_stack_label) : text, pending_);
    }
    return stack_iids_[stack];
}

proto_message perfetto_writer::uint_argument(std::string_view name, uint32_t kind, uint64_t value) {
    return proto_message()
        .varint(field::annotation_name_iid, argument_names_.iid(name, pending_))
        .varint(kind, value);
}

void perfetto_writer::allocation_begins(const analysis::allocation_lifetime& life,
                                        analysis::memory_category category, size_t lane,
                                        int64_t time_ns) {
    const std::string name =
        analysis::format_bytes(life.size) + " " + innermost_frame(source_, life.stack);
    proto_message e;
    e.varint(field::event_type, type_slice_begin)
        .varint(field::event_track_uuid, first_lane_track + lane)
        .varint(field::event_category_iids,
                categories_.iid(analysis::category_name(category), pending_))
        .varint(field::event_name_iid, names_.iid(name, pending_))
        .message(field::event_debug_annotations,
                 uint_argument("address", field::annotation_pointer_value, life.address))
        .message(field::event_debug_annotations,
                 uint_argument("size", field::annotation_uint_value, life.size))
        .message(
            field::event_debug_annotations,
            uint_argument("requested_size", field::annotation_uint_value, life.requested_size));
    if (life.from_before_trace) {
        e.message(field::event_debug_annotations,
                  uint_argument("from_before_trace", field::annotation_bool_value, 1));
    }
    e.message(field::event_debug_annotations,
              uint_argument("stack", field::annotation_string_value_iid, stack_iid(life.stack)));
    event(time_ns, e);
}

//-------------------------------------------------------------------------------------------------
// [SECTION] slices on tracks
//-------------------------------------------------------------------------------------------------

// What happens at a position of the trace, in the order it is written: slices that end there
// first (so the track they free can take a slice that begins there), then the memory counters,
// then slices that begin there.
struct timed_event {
    enum kind : uint8_t { slice_end, counters, slice_begin, empty_slice_end };
    size_t position = 0;
    kind what = counters;
    uint32_t lifetime = 0;  // the slice's allocation (model.lifetimes())
    bool operator<(const timed_event& other) const {
        return position != other.position ? position < other.position : what < other.what;
    }
};

// The events of the range in order, and each allocation's lane: slices on one track must not
// overlap, so an allocation takes the lowest track free when it begins.
std::vector<timed_event> events_of(const analysis::device_model& model, const entry_range& range,
                                   std::vector<uint32_t>& lane_of, size_t& lanes) {
    std::vector<timed_event> events;
    for (size_t p = range.first; p <= range.end; ++p) {
        events.push_back({p, timed_event::counters, 0});
    }
    const auto& lifetimes = model.lifetimes();
    for (size_t i = 0; i < lifetimes.size(); ++i) {
        const auto& life = lifetimes[i];
        if (life.begin > range.end || life.end <= range.first) {
            continue;  // not alive during the range
        }
        const auto index = static_cast<uint32_t>(i);
        events.push_back({life.begin, timed_event::slice_begin, index});
        events.push_back(
            {life.end,
             life.end > life.begin ? timed_event::slice_end : timed_event::empty_slice_end, index});
    }
    std::stable_sort(events.begin(), events.end());
    lane_of.assign(lifetimes.size(), 0);
    std::priority_queue<uint32_t, std::vector<uint32_t>, std::greater<>> free_lanes;
    lanes = 0;
    for (const timed_event& e : events) {
        if (e.what == timed_event::slice_begin) {
            if (free_lanes.empty()) {
                free_lanes.push(static_cast<uint32_t>(lanes++));
            }
            lane_of[e.lifetime] = free_lanes.top();
            free_lanes.pop();
        } else if (e.what != timed_event::counters) {
            free_lanes.push(lane_of[e.lifetime]);
        }
    }
    return events;
}

//-------------------------------------------------------------------------------------------------
// [SECTION] the trace
//-------------------------------------------------------------------------------------------------

// The memory counters at position p: each where it changed (all three at the range's start).
// One event per changed counter costs less than all three together: most entries change one.
void write_counters(perfetto_writer& writer, const analysis::device_model& model, size_t p,
                    bool first, int64_t time_ns) {
    const std::pair<analysis::series, uint64_t> series[] = {
        {analysis::series::allocated, allocated_track},
        {analysis::series::active, active_track},
        {analysis::series::reserved, reserved_track}};
    for (const auto& [s, track] : series) {
        const auto& values = model.values(s);
        if (first || values[p] != values[p - 1]) {
            writer.counter(track, time_ns, values[p]);
        }
    }
}

// Annotations (memtrail's own entries and PyTorch's, kept beside the trace) and OOMs.
void write_marks(perfetto_writer& writer, const analysis::device_model& model,
                 const entry_range& range) {
    const snapshot::snapshot& source = model.source();
    const int64_t range_start_ns = model.time_at(range.first);
    const int64_t range_end_ns = model.time_at(range.end);
    for (const auto& a : source.annotations) {
        if (a.device == model.device() &&
            (range.whole || (a.time_ns >= range_start_ns && a.time_ns <= range_end_ns))) {
            writer.named(annotations_track, a.is_start ? type_slice_begin : type_slice_end,
                         source.string_at(a.name), a.time_ns);
        }
    }
    for (size_t i = range.first; i < range.end; ++i) {
        const snapshot::trace_entry& e = model.entry(i);
        if (e.kind == action::annotation_start || e.kind == action::annotation_end ||
            e.kind == action::annotation_marker) {
            const uint64_t type = e.kind == action::annotation_start ? type_slice_begin
                                  : e.kind == action::annotation_end ? type_slice_end
                                                                     : type_instant;
            writer.named(annotations_track, type, source.string_at(e.name), e.time_ns);
        } else if (e.kind == action::oom) {
            writer.named(oom_track, type_instant, "OOM " + analysis::format_bytes(e.size),
                         e.time_ns);
        }
    }
}

}  // namespace

void write_perfetto(const analysis::device_model& model, const analysis::category_map& categories,
                    const entry_range& range, std::ostream& out) {
    std::vector<uint32_t> lane_of;
    size_t lanes = 0;
    const std::vector<timed_event> events = events_of(model, range, lane_of, lanes);
    perfetto_writer writer(model, out);
    writer.describe_tracks(lanes);
    const auto& lifetimes = model.lifetimes();
    const auto& assignments = categories.assignments();
    // Times kept in the trace's order: a track's slices must end before the next one begins,
    // also where a recorded clock stepped back.
    int64_t time_ns = std::numeric_limits<int64_t>::min();
    for (const timed_event& e : events) {
        time_ns = std::max(time_ns, model.time_at(e.position));
        switch (e.what) {
            case timed_event::counters:
                write_counters(writer, model, e.position, e.position == range.first, time_ns);
                break;
            case timed_event::slice_begin:
                writer.allocation_begins(lifetimes[e.lifetime], assignments[e.lifetime].category,
                                         lane_of[e.lifetime], time_ns);
                break;
            case timed_event::slice_end:
            case timed_event::empty_slice_end:
                writer.slice_ends(first_lane_track + lane_of[e.lifetime], time_ns);
                break;
        }
    }
    write_marks(writer, model, range);
}

}  // namespace memtrail::cli

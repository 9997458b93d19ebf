// recorder::take_snapshot: the allocator's state, the recorded traces and their stacks, turned
// into the shared snapshot model.

#include <unistd.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <limits>
#include <unordered_map>

#include "detail/call_context.hpp"
#include "detail/device_history.hpp"
#include "detail/stack_converter.hpp"
#include "detail/thread_identity.hpp"
#include "detail/trace_ring.hpp"
#include "memtrail/recorder/recorder.hpp"

namespace memtrail::recorder {

namespace {

std::string host_name() {
    std::array<char, 256> name{};
    return gethostname(name.data(), name.size() - 1) == 0 ? std::string(name.data())
                                                          : std::string();
}

snapshot::allocator_settings settings_of(const allocator_config& config) {
    snapshot::allocator_settings settings;
    settings.conf = config.source;
    settings.max_split_size = config.max_split_size == std::numeric_limits<uint64_t>::max()
                                  ? -1
                                  : static_cast<int64_t>(config.max_split_size);
    settings.max_non_split_rounding_size = config.max_non_split_rounding_size;
    settings.garbage_collection_threshold = config.garbage_collection_threshold;
    settings.expandable_segments = config.expandable_segments;
    settings.roundup_power2_divisions = config.roundup_power2_divisions;
    return settings;
}

snapshot::block_state state_of(const block_info& b) {
    if (b.allocated) {
        return snapshot::block_state::active_allocated;
    }
    return b.active ? snapshot::block_state::active_pending_free : snapshot::block_state::inactive;
}

// Recorder label ids to snapshot string ids, each label looked up once.
class label_converter {
  public:
    explicit label_converter(snapshot::snapshot& out) : out_(out) {}
    snapshot::string_id convert(uint32_t label) {
        if (label == 0) {
            return snapshot::no_id;
        }
        auto [it, inserted] = converted_.try_emplace(label, snapshot::no_id);
        if (inserted) {
            it->second = out_.intern_string(detail::label_text(label));
        }
        return it->second;
    }

  private:
    snapshot::snapshot& out_;
    std::unordered_map<uint32_t, snapshot::string_id> converted_;
};

}  // namespace

snapshot::snapshot recorder::take_snapshot() {
    snapshot::snapshot out;
    detail::stack_converter stacks(stacks_, out);
    label_converter labels(out);

    out.info.producer = "memtrail " MEMTRAIL_VERSION;
    out.info.host = host_name();
    out.info.pid = getpid();
    out.info.time_ns = std::chrono::duration_cast<std::chrono::nanoseconds>(
                           std::chrono::system_clock::now().time_since_epoch())
                           .count();
    out.settings = settings_of(allocator_.on(0).config());

    for (int d = 0; d < allocator_.device_count(); ++d) {
        device_allocator& allocator = allocator_.on(d);
        snapshot::device_properties properties;
        properties.device = static_cast<int8_t>(d);
        properties.name = allocator.get_device().name();
        properties.total_memory = allocator.get_device().get_memory_info().total;
        out.info.devices.push_back(properties);

        // The allocator's snapshot() adds a "snapshot" entry to the trace and, through
        // on_event, sets the cut: the trace is copied up to that entry and no further, however
        // much other threads record meanwhile. Copied at once, before the ring wraps past it.
        detail::snapshot_cut_on_this_thread = detail::no_snapshot_cut;
        const std::vector<segment_info> segments = allocator.snapshot();
        const detail::trace_ring::contents recorded =
            history(d).ring.copy(detail::snapshot_cut_on_this_thread);
        for (const segment_info& info : segments) {
            snapshot::segment& seg = out.segments.emplace_back();
            seg.device = static_cast<int8_t>(d);
            seg.address = info.address;
            seg.total_size = info.total_size;
            seg.allocated_size = info.allocated_size;
            seg.active_size = info.active_size;
            seg.requested_size = info.requested_size;
            seg.stream = info.stream;
            seg.is_large = info.is_large;
            seg.is_expandable = info.is_expandable;
            const detail::call_context created =
                detail::decode_call_context(info.context, epoch_ns_);
            seg.stack = stacks.convert(created.stack);
            seg.time_ns = created.time_ns;
            for (const block_info& b : info.blocks) {
                snapshot::block& out_block = seg.blocks.emplace_back();
                out_block.address = b.address;
                out_block.size = b.size;
                out_block.requested_size = b.requested_size;
                out_block.state = state_of(b);
                if (b.active) {
                    const detail::call_context allocated =
                        detail::decode_call_context(b.context, epoch_ns_);
                    out_block.stack = stacks.convert(allocated.stack);
                    out_block.time_ns = allocated.time_ns;
                }
            }
        }
        out.stats[d] = allocator.memory_stats();

        snapshot::device_trace& trace = out.trace_for(d);
        trace.dropped = recorded.dropped;
        trace.entries.reserve(recorded.records.size());
        for (const detail::trace_record& record : recorded.records) {
            snapshot::trace_entry& entry = trace.entries.emplace_back();
            entry.kind = static_cast<snapshot::action>(record.action);
            entry.device = record.device;
            entry.address = record.address;
            entry.size = record.size;
            const bool has_request = entry.kind == snapshot::action::alloc ||
                                     entry.kind == snapshot::action::free_requested ||
                                     entry.kind == snapshot::action::free_completed;
            entry.requested_size = has_request ? record.size : 0;
            entry.stream = record.stream;
            entry.thread = record.thread;
            entry.time_ns = record.time_ns;
            entry.stack = stacks.convert(record.stack);
            entry.user_metadata = labels.convert(record.metadata);
            entry.name = labels.convert(record.name);
            if (entry.kind == snapshot::action::annotation_start ||
                entry.kind == snapshot::action::annotation_end) {
                out.annotations.push_back({entry.kind == snapshot::action::annotation_start,
                                           entry.name, entry.device, entry.time_ns});
            }
        }
    }
    std::sort(out.segments.begin(), out.segments.end(),
              [](const snapshot::segment& a, const snapshot::segment& b) {
                  return std::pair(a.device, a.address) < std::pair(b.device, b.address);
              });
    return out;
}

}  // namespace memtrail::recorder

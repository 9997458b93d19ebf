// recorder::take_snapshot: the allocator's state, the recorded traces and their stacks, turned
// into the shared snapshot model.

#include <unistd.h>

#include <algorithm>
#include <array>
#include <charconv>
#include <chrono>
#include <functional>
#include <unordered_map>

#include "detail/call_context.hpp"
#include "detail/device_history.hpp"
#include "detail/observed_allocations.hpp"
#include "detail/thread_identity.hpp"
#include "detail/trace_ring.hpp"
#include "memtrail/bridge/allocator_snapshot.hpp"
#include "memtrail/recorder/recorder.hpp"
#include "memtrail/stacks/stack_converter.hpp"

namespace memtrail::recorder {

namespace {

std::string host_name() {
    std::array<char, 256> name{};
    return gethostname(name.data(), name.size() - 1) == 0 ? std::string(name.data())
                                                          : std::string();
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

// The per-process memory fraction (settings.other["per_process_memory_fraction"], as the OOM
// report reads it), when the program set one: settings are the process's, so it is recorded only
// when every device that has a fraction has the same one (one device per process, the usual).
void record_memory_fraction(caching_allocator& allocator, snapshot::allocator_settings& settings) {
    double fraction = 0.0;
    for (int d = 0; d < allocator.device_count(); ++d) {
        const double set = allocator.on(d).memory_fraction();
        if (set > 0.0 && fraction > 0.0 && set != fraction) {
            return;
        }
        fraction = set > 0.0 ? set : fraction;
    }
    if (fraction > 0.0) {
        std::array<char, 32> text{};
        const auto written = std::to_chars(text.data(), text.data() + text.size(), fraction);
        settings.other["per_process_memory_fraction"] = std::string(text.data(), written.ptr);
    }
}

// Appends `records`, the ring's entries of device `device`, to its trace in `out`.
void append_trace(snapshot::snapshot& out, int device, const detail::trace_ring::contents& recorded,
                  detail::stack_converter& stacks, label_converter& labels) {
    snapshot::device_trace& trace = out.trace_for(device);
    trace.dropped = recorded.dropped;
    trace.entries.reserve(recorded.records.size());
    for (const detail::trace_record& record : recorded.records) {
        snapshot::trace_entry& entry = trace.entries.emplace_back();
        entry.kind = static_cast<snapshot::action>(record.action);
        entry.device = record.device;
        entry.address = record.address;
        entry.size = record.size;
        entry.requested_size = bridge::requested_size_of(entry.kind, record.size);
        entry.stream = record.stream;
        entry.thread = record.thread;
        entry.time_ns = record.time_ns;
        entry.stack = stacks.convert(record.stack);
        entry.user_metadata = labels.convert(record.metadata);
        entry.name = labels.convert(record.name);
        if (entry.kind == snapshot::action::annotation_start ||
            entry.kind == snapshot::action::annotation_end) {
            out.annotations.push_back({entry.kind == snapshot::action::annotation_start, entry.name,
                                       entry.device, entry.time_ns});
        }
    }
}

// Who took the snapshot (which rank of which job), where and when.
void describe_process(snapshot::snapshot& out, const snapshot::job_identity& job) {
    out.info.producer = "memtrail " MEMTRAIL_VERSION;
    out.info.host = host_name();
    out.info.pid = getpid();
    out.info.job = job;
    out.info.time_ns = std::chrono::duration_cast<std::chrono::nanoseconds>(
                           std::chrono::system_clock::now().time_since_epoch())
                           .count();
}

}  // namespace

recorder::trace_events recorder::take_events(int device, uint64_t from, size_t most,
                                             detail::symbol_cache* symbols) {
    device_allocator& allocator = allocator_.on(device);
    trace_events out;
    detail::stack_converter stacks(stacks_, out.events, symbols);
    label_converter labels(out.events);
    describe_process(out.events, job_);
    const uint64_t cut = most > UINT64_MAX - from ? UINT64_MAX : from + most;
    const detail::trace_ring::contents recorded = history(device).ring.copy(
        cut, [&allocator](const std::function<void()>& batch) { allocator.run_under_lock(batch); },
        from);
    out.missed = recorded.dropped;
    out.next = from + recorded.dropped + recorded.records.size();
    append_trace(out.events, device, recorded, stacks, labels);
    out.events.trace_for(device).dropped = 0;  // said by `missed`, for the subscriber
    return out;
}

snapshot::snapshot recorder::take_snapshot(snapshot_contents contents,
                                           std::vector<uint64_t>* trace_ends,
                                           detail::symbol_cache* symbols) {
    snapshot::snapshot out;
    detail::stack_converter stacks(stacks_, out, symbols);
    label_converter labels(out);

    describe_process(out, job_);
    if (trace_ends != nullptr) {
        trace_ends->clear();
    }
    out.settings = bridge::to_snapshot_settings(allocator_.on(0).config());
    record_memory_fraction(allocator_, out.settings);

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
        // Not recording, the recorder observes nothing: the cut is the ring's end, taken under
        // the same hold of the lock as the segments.
        detail::snapshot_cut_on_this_thread = detail::no_snapshot_cut;
        std::vector<segment_info> segments;
        allocator.run_under_lock([&] {
            segments = allocator.snapshot();
            if (detail::snapshot_cut_on_this_thread == detail::no_snapshot_cut) {
                detail::snapshot_cut_on_this_thread = history(d).ring.end();
            }
        });
        const uint64_t cut = detail::snapshot_cut_on_this_thread;
        if (trace_ends != nullptr) {
            trace_ends->push_back(cut);
        }
        detail::trace_ring::contents recorded;
        if (contents == snapshot_contents::full) {
            recorded = history(d).ring.copy(cut, [&allocator](const std::function<void()>& batch) {
                allocator.run_under_lock(batch);
            });
        }
        for (const segment_info& info : segments) {
            snapshot::segment& seg =
                out.segments.emplace_back(bridge::to_snapshot_segment(info, d));
            const detail::call_context created =
                detail::decode_call_context(info.context, epoch_ns_);
            seg.stack = stacks.convert(created.stack);
            seg.time_ns = created.time_ns;
            for (size_t i = 0; i < info.blocks.size(); ++i) {
                if (info.blocks[i].active) {
                    const detail::call_context allocated =
                        detail::decode_call_context(info.blocks[i].context, epoch_ns_);
                    seg.blocks[i].stack = stacks.convert(allocated.stack);
                    seg.blocks[i].time_ns = allocated.time_ns;
                }
            }
        }
        for (const auto& [address, observed] : observed_->live(d)) {
            snapshot::segment& seg = out.segments.emplace_back();
            seg.device = static_cast<int8_t>(d);
            seg.address = address;
            seg.total_size = seg.allocated_size = seg.active_size = seg.requested_size =
                observed.size;
            seg.stream = observed.stream;
            const detail::call_context made =
                detail::decode_call_context(observed.context, epoch_ns_);
            seg.stack = stacks.convert(made.stack);
            seg.time_ns = made.time_ns;
            seg.blocks.push_back({.address = address,
                                  .size = observed.size,
                                  .requested_size = observed.size,
                                  .state = snapshot::block_state::active_allocated,
                                  .stack = seg.stack,
                                  .time_ns = made.time_ns});
        }
        out.stats[d] = allocator.memory_stats();

        if (contents == snapshot_contents::full) {
            append_trace(out, d, recorded, stacks, labels);
        }
    }
    add_outside_memory(out, [&](uint64_t context) {
        return stacks.convert(detail::decode_call_context(context, epoch_ns_).stack);
    });
    std::sort(out.segments.begin(), out.segments.end(),
              [](const snapshot::segment& a, const snapshot::segment& b) {
                  return std::pair(a.device, a.address) < std::pair(b.device, b.address);
              });
    return out;
}

}  // namespace memtrail::recorder

// Replays a trace through memtrail's allocator on the simulated device. The plan says which
// entries are requests; the allocator produces the rest, and its own trace is the result.

#include <stdexcept>
#include <unordered_map>

#include "memtrail/core/caching_allocator.hpp"
#include "memtrail/core/simulated_device.hpp"
#include "memtrail/replay/replay.hpp"
#include "trace_plan.hpp"

namespace memtrail::replay {

namespace {

using snapshot::action;

constexpr uint64_t default_device_memory = 80ull << 30;
// Deferred frees wait on a stream of their own, so each completes exactly when the trace says.
constexpr stream_handle first_deferral_stream = 0xdefe000000000000ull;

action to_model(allocator_action a) {
    switch (a) {
        case allocator_action::alloc: return action::alloc;
        case allocator_action::free_requested: return action::free_requested;
        case allocator_action::free_completed: return action::free_completed;
        case allocator_action::segment_alloc: return action::segment_alloc;
        case allocator_action::segment_free: return action::segment_free;
        case allocator_action::segment_map: return action::segment_map;
        case allocator_action::segment_unmap: return action::segment_unmap;
        case allocator_action::snapshot: return action::snapshot;
        case allocator_action::oom: return action::oom;
    }
    return action::alloc;
}

// Collects the allocator's events as the replay's own trace.
class trace_collector : public allocator_observer {
public:
    explicit trace_collector(int device) : device_(device) {}
    void on_event(const allocator_event& e) override {
        snapshot::trace_entry& t = entries.emplace_back();
        t.kind = to_model(e.action);
        t.device = static_cast<int8_t>(device_);
        t.address = e.address;
        t.size = e.size;
        t.requested_size = (e.action == allocator_action::alloc ||
                            e.action == allocator_action::free_requested ||
                            e.action == allocator_action::free_completed)
                               ? e.size
                               : 0;
        t.stream = e.stream;
    }
    std::vector<snapshot::trace_entry> entries;

private:
    int device_;
};

uint64_t device_total_of(const snapshot::snapshot& input, const replay_options& options) {
    if (options.device_memory) {
        return options.device_memory;
    }
    for (const auto& d : input.info.devices) {
        if (d.device == options.device && d.total_memory) {
            return d.total_memory;
        }
    }
    return default_device_memory;
}

void fill_final_state(snapshot::snapshot& out, const device_allocator& allocator, int device) {
    for (const segment_info& s : allocator.snapshot(false)) {
        snapshot::segment& seg = out.segments.emplace_back();
        seg.device = static_cast<int8_t>(device);
        seg.address = s.address;
        seg.total_size = s.total_size;
        seg.allocated_size = s.allocated_size;
        seg.active_size = s.active_size;
        seg.requested_size = s.requested_size;
        seg.stream = s.stream;
        seg.is_large = s.is_large;
        seg.is_expandable = s.is_expandable;
        for (const block_info& b : s.blocks) {
            snapshot::block& blk = seg.blocks.emplace_back();
            blk.address = b.address;
            blk.size = b.size;
            blk.requested_size = b.requested_size;
            blk.state = b.allocated ? snapshot::block_state::active_allocated
                        : b.active  ? snapshot::block_state::active_pending_free
                                    : snapshot::block_state::inactive;
        }
    }
}

void fill_settings(snapshot::allocator_settings& s, const allocator_config& c) {
    s.conf = c.source;
    s.max_split_size = c.max_split_size == UINT64_MAX ? -1 : static_cast<int64_t>(c.max_split_size);
    s.max_non_split_rounding_size = c.max_non_split_rounding_size;
    s.garbage_collection_threshold = c.garbage_collection_threshold;
    s.expandable_segments = c.expandable_segments;
    s.roundup_power2_divisions = c.roundup_power2_divisions;
}

}  // namespace

replay_result replay_trace(const snapshot::snapshot& input, const replay_options& options) {
    const snapshot::device_trace* trace = input.find_trace(options.device);
    if (!trace) {
        throw std::runtime_error("replay: the snapshot has no trace for device " +
                                 std::to_string(options.device));
    }
    const auto& entries = trace->entries;
    const uint64_t total = device_total_of(input, options);
    const detail::trace_plan plan = detail::plan_trace(entries, total);

    simulated_device_options device_options;
    device_options.index = options.device;
    device_options.capacity = total;
    simulated_device dev(device_options);
    dev.set_events_complete_immediately(false);
    if (options.reuse_trace_addresses) {
        dev.queue_addresses(plan.device_addresses);
    }
    device_allocator allocator(dev, options.config);
    if (options.memory_fraction > 0) {
        allocator.set_memory_fraction(options.memory_fraction);
    }
    trace_collector collector(options.device);
    allocator.set_observer(&collector);

    replay_result result;
    // Trace address -> replayed address of live allocations (they differ in what-if runs).
    std::unordered_map<uint64_t, device_address> live;
    std::unordered_map<uint64_t, stream_handle> deferred;  // trace address -> its wait stream
    stream_handle next_deferral_stream = first_deferral_stream;
    uint64_t peak_allocated = 0, peak_reserved = 0;

    for (size_t i = 0; i < entries.size(); ++i) {
        const auto& e = entries[i];
        switch (plan.steps[i]) {
            case detail::step_kind::allocate:
            case detail::step_kind::allocate_oom: {
                const bool expected_to_fail = plan.steps[i] == detail::step_kind::allocate_oom;
                try {
                    const device_address a = allocator.allocate(e.size, e.stream);
                    if (expected_to_fail) {
                        allocator.free(a);  // the original failed here: do not keep it
                    } else {
                        live[e.address] = a;
                        ++result.allocations;
                    }
                } catch (const out_of_memory_error&) {
                    if (!expected_to_fail) {
                        ++result.ooms;
                        if (!result.first_oom_entry) {
                            result.first_oom_entry = i;
                        }
                        if (options.stop_at_oom) {
                            i = entries.size();
                        }
                    } else {
                        ++result.ooms;
                        if (!result.first_oom_entry) {
                            result.first_oom_entry = i;
                        }
                    }
                }
                break;
            }
            case detail::step_kind::free:
            case detail::step_kind::free_deferred: {
                auto it = live.find(e.address);
                if (it == live.end()) {
                    ++result.unmatched_frees;  // allocated before the trace began, or failed here
                    break;
                }
                if (plan.steps[i] == detail::step_kind::free_deferred) {
                    const stream_handle wait = next_deferral_stream++;
                    allocator.record_stream(it->second, wait);
                    deferred[e.address] = wait;
                }
                allocator.free(it->second);
                live.erase(it);
                break;
            }
            case detail::step_kind::complete_free: {
                auto it = deferred.find(e.address);
                if (it != deferred.end()) {
                    dev.complete_stream(it->second);
                    deferred.erase(it);
                    allocator.process_events();
                }
                break;
            }
            case detail::step_kind::empty_cache:
                allocator.empty_cache();
                break;
            case detail::step_kind::snapshot:
                allocator.snapshot(true);
                break;
            case detail::step_kind::consequence:
                break;
        }
        const device_stats s = allocator.stats();
        peak_allocated = std::max<uint64_t>(peak_allocated, static_cast<uint64_t>(s.allocated_bytes[0].current));
        peak_reserved = std::max<uint64_t>(peak_reserved, static_cast<uint64_t>(s.reserved_bytes[0].current));
    }
    allocator.set_observer(nullptr);

    const device_stats final_stats = allocator.stats();
    result.stats = to_memory_stats(final_stats);
    result.peak_allocated = peak_allocated;
    result.peak_reserved = peak_reserved;
    result.device_allocations = static_cast<uint64_t>(final_stats.num_device_alloc);

    snapshot::snapshot& out = result.final_state;
    out.info.producer = "memtrail replay";
    snapshot::device_properties props;
    props.device = static_cast<int8_t>(options.device);
    props.name = dev.name();
    props.total_memory = total;
    out.info.devices.push_back(props);
    fill_settings(out.settings, options.config);
    fill_final_state(out, allocator, options.device);
    out.trace_for(options.device).entries = std::move(collector.entries);
    out.stats[options.device] = result.stats;
    return result;
}

}  // namespace memtrail::replay

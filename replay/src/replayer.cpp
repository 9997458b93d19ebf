// One replay of a trace: the plan says which entries are requests; the allocator produces the
// rest, and its own trace is the result.

#include "detail/replayer.hpp"

#include <algorithm>

#include "memtrail/bridge/allocator_snapshot.hpp"

namespace memtrail::replay::detail {

namespace {

using snapshot::action;

// Deferred frees wait on a stream of their own, so each completes exactly when the trace says.
constexpr stream_handle first_deferral_stream = 0xdefe000000000000ull;

bool same_entry(const snapshot::trace_entry& a, const snapshot::trace_entry& b) {
    return a.kind == b.kind && a.address == b.address && a.size == b.size && a.stream == b.stream;
}

simulated_device_options device_options_of(const replay_inputs& in) {
    simulated_device_options device_options;
    device_options.index = in.options.device;
    device_options.capacity = in.device_total;
    return device_options;
}

}  // namespace

bool compared_action(action a) {
    return a != action::snapshot && a != action::annotation_start && a != action::annotation_end &&
           a != action::annotation_marker;
}

void trace_collector::on_event(const allocator_event& e) {
    snapshot::trace_entry& t = entries.emplace_back();
    t.kind = bridge::to_snapshot_action(e.action);
    t.device = static_cast<int8_t>(device_);
    t.address = e.address;
    t.size = e.size;
    t.requested_size = bridge::requested_size_of(t.kind, e.size);
    t.stream = e.stream;
}

replayer::replayer(const replay_inputs& inputs, const step_readings& readings)
    : in_(inputs),
      readings_(readings),
      device_(device_options_of(inputs)),
      allocator_(device_, inputs.options.config),
      collector_(inputs.options.device),
      pools_(inputs.plan, inputs.entries, inputs.final_pools, readings.flipped, allocator_) {
    device_.set_events_complete_immediately(false);
    if (in_.options.reuse_trace_addresses) {
        device_.queue_addresses(in_.plan.device_addresses);
    }
    if (in_.options.memory_fraction > 0) {
        allocator_.set_memory_fraction(in_.options.memory_fraction);
    }
    allocator_.set_observer(&collector_);
}

// What others held on the device at the oom entry `i`: the original found it this full (the
// entry records the free bytes), and whatever it did not hold itself, others did.
uint64_t replayer::external_usage_at(size_t i) const {
    const uint64_t held = in_.plan.reserved_at[i] + in_.entries[i].address;
    return held < in_.device_total ? in_.device_total - held : 0;
}

bool replayer::run(const std::vector<size_t>* expected, size_t& mismatch) {
    const auto& entries = in_.entries;
    mismatch = entries.size();
    // Others held memory on the device from the start: as much as the first OOM shows.
    for (size_t i = 0; i < entries.size(); ++i) {
        if (in_.plan.steps[i] == step_kind::allocate_oom) {
            device_.set_external_usage(external_usage_at(i));
            break;
        }
    }
    if (readings_.unseen.after_step == unseen_syncs::at_start) {
        make_unseen_syncs();
    }
    for (size_t i = 0; i < entries.size(); ++i) {
        if (i == in_.options.release_private_pools_before) {
            pools_.release_held_pools();
        }
        const bool go_on = play(i);
        if (go_on && readings_.unseen.count > 0 && i == readings_.unseen.after_step) {
            make_unseen_syncs();
        }
        if (expected && !matches_so_far(*expected, mismatch)) {
            return false;
        }
        track_peaks();
        if (!go_on) {
            break;
        }
    }
    return true;
}

bool replayer::play(size_t i) {
    try {
        switch (in_.plan.steps[i]) {
            case step_kind::allocate:
            case step_kind::allocate_oom:
                return allocate(i);
            case step_kind::free:
            case step_kind::free_deferred:
                free(i);
                break;
            case step_kind::complete_before_release:
                complete_before_release(i);
                break;
            case step_kind::complete_free:
                complete_deferred(in_.entries[i]);
                break;
            case step_kind::empty_cache:
                empty_cache(i);
                break;
            case step_kind::release_run:
                release_run(i);
                break;
            case step_kind::snapshot:
                allocator_.snapshot(true);
                break;
            case step_kind::consequence:
                break;
        }
    } catch (const usage_error&) {
        // Only a replay that already diverged frees what it does not hold: count it and go on,
        // so the comparison can point at the first difference.
        ++result_.unmatched_frees;
    }
    return true;
}

bool replayer::allocate(size_t i) {
    const snapshot::trace_entry& e = in_.entries[i];
    const bool expected_to_fail = in_.plan.steps[i] == step_kind::allocate_oom;
    if (expected_to_fail) {
        device_.set_external_usage(external_usage_at(i));
    }
    const pool_id pool = pools_.pool_for(i, e);
    try {
        const device_address a = pools_.allocate(pool, e.size, e.stream);
        if (expected_to_fail) {
            allocator_.free(a);  // the original failed here: do not keep it
        } else {
            live_[e.address] = a;
            ++result_.allocations;
        }
    } catch (const out_of_memory_error&) {
        ++result_.ooms;
        result_.oom_entries.push_back(i);
        if (!result_.first_oom_entry) {
            result_.first_oom_entry = i;
        }
        if (in_.options.stop_at_oom && !expected_to_fail) {
            return false;
        }
    }
    return true;
}

void replayer::free(size_t i) {
    const snapshot::trace_entry& e = in_.entries[i];
    auto it = live_.find(e.address);
    if (it == live_.end()) {
        ++result_.unmatched_frees;  // allocated before the trace began, or failed
        return;
    }
    if (in_.plan.steps[i] == step_kind::free_deferred) {
        const stream_handle wait = first_deferral_stream + in_.plan.completion[i];
        allocator_.record_stream(it->second, wait);
        deferred_[e.address] = wait;
    }
    allocator_.free(it->second);
    live_.erase(it);
}

void replayer::complete_before_release(size_t i) {
    // Either the allocation's own event check completed it (complete it now) or the
    // synchronization on its release path did (the allocator will). When releases follow,
    // without garbage collection or oversize releases, the synchronization is the likelier: it
    // gives the same outcome unless completing now would have let the allocation reuse the
    // block, which the original then did not do. Otherwise the event check is.
    const allocator_config& config = in_.options.config;
    const bool leave_to_release = in_.plan.releases_follow[i] &&
                                  config.garbage_collection_threshold == 0.0 &&
                                  config.max_split_size == size_rules::unlimited;
    if (leave_to_release == (readings_.flipped[i] != 0)) {
        complete_deferred(in_.entries[i]);
    }
}

void replayer::complete_deferred(const snapshot::trace_entry& e) {
    auto it = deferred_.find(e.address);
    if (it != deferred_.end()) {
        device_.complete_stream(it->second);
        deferred_.erase(it);
        allocator_.process_events();
    }
}

void replayer::empty_cache(size_t i) {
    pools_.release_pools_freed_at(i);
    if (const auto only = pools_.only_pools_freed_at(i); !only.empty()) {
        // A MemPool going away empties itself (emptyCache of its id).
        for (const pool_id& pool : only) {
            allocator_.empty_cache(pool);
        }
    } else {
        allocator_.empty_cache();
    }
}

void replayer::release_run(size_t i) {
    pools_.release_pools_freed_at(i);
    // The allocation's own releases, or an empty_cache before it: by default what the
    // allocator's state says the allocation would do.
    const size_t request = in_.plan.next_request[i];
    const bool allocation_releases =
        request < in_.entries.size() &&
        allocator_.would_release_memory(in_.entries[request].size, in_.entries[request].stream);
    if (allocation_releases == (readings_.flipped[i] != 0)) {
        allocator_.empty_cache();
    }
}

// empty_cache calls that freed nothing leave no entry, only synchronizations.
void replayer::make_unseen_syncs() {
    for (int k = 0; k < readings_.unseen.count; ++k) {
        allocator_.empty_cache();
    }
}

bool replayer::matches_so_far(const std::vector<size_t>& expected, size_t& mismatch) {
    for (; produced_ < collector_.entries.size(); ++produced_) {
        const auto& mine = collector_.entries[produced_];
        if (!compared_action(mine.kind)) {
            continue;
        }
        if (compared_so_far_ >= expected.size() ||
            !same_entry(mine, in_.entries[expected[compared_so_far_]])) {
            mismatch = compared_so_far_ < expected.size() ? expected[compared_so_far_]
                                                          : in_.entries.size() - 1;
            return false;
        }
        ++compared_so_far_;
    }
    return true;
}

void replayer::track_peaks() {
    const device_stats s = allocator_.stats();
    peak_allocated_ =
        std::max<uint64_t>(peak_allocated_, static_cast<uint64_t>(s.allocated_bytes[0].current));
    peak_reserved_ =
        std::max<uint64_t>(peak_reserved_, static_cast<uint64_t>(s.reserved_bytes[0].current));
}

replay_result replayer::finish() {
    allocator_.set_observer(nullptr);
    const replay_options& options = in_.options;
    const device_stats final_stats = allocator_.stats();
    result_.stats = to_memory_stats(final_stats);
    result_.peak_allocated = peak_allocated_;
    result_.peak_reserved = peak_reserved_;
    result_.device_allocations = static_cast<uint64_t>(final_stats.num_device_alloc);

    snapshot::snapshot& out = result_.final_state;
    out.info.producer = "memtrail replay";
    snapshot::device_properties props;
    props.device = static_cast<int8_t>(options.device);
    props.name = device_.name();
    props.total_memory = in_.device_total;
    out.info.devices.push_back(props);
    out.settings = bridge::to_snapshot_settings(options.config);
    for (const segment_info& s : allocator_.snapshot(false)) {
        out.segments.push_back(bridge::to_snapshot_segment(s, options.device));
    }
    out.trace_for(options.device).entries = std::move(collector_.entries);
    out.stats[options.device] = result_.stats;
    return std::move(result_);
}

replay_result run_once(const replay_inputs& inputs, const step_readings& readings,
                       const std::vector<size_t>* expected, size_t& mismatch) {
    replayer replay(inputs, readings);
    if (!replay.run(expected, mismatch)) {
        return std::move(replay.result());  // stopped at a difference: the counts so far
    }
    return replay.finish();
}

}  // namespace memtrail::replay::detail

// Replays a trace through memtrail's allocator on the simulated device. The plan says which
// entries are requests; the allocator produces the rest, and its own trace is the result.

#include <algorithm>
#include <bit>
#include <optional>
#include <stdexcept>
#include <unordered_map>

#include "memtrail/bridge/allocator_snapshot.hpp"
#include "memtrail/core/caching_allocator.hpp"
#include "memtrail/core/simulated_device.hpp"
#include "memtrail/replay/replay.hpp"
#include "pool_tracker.hpp"
#include "trace_plan.hpp"

namespace memtrail::replay {

namespace {

using snapshot::action;

constexpr uint64_t default_device_memory = 80ull << 30;
// Deferred frees wait on a stream of their own, so each completes exactly when the trace says.
constexpr stream_handle first_deferral_stream = 0xdefe000000000000ull;

// Collects the allocator's events as the replay's own trace.
class trace_collector : public allocator_observer {
  public:
    explicit trace_collector(int device) : device_(device) {}
    void on_event(const allocator_event& e) override {
        snapshot::trace_entry& t = entries.emplace_back();
        t.kind = bridge::to_snapshot_action(e.action);
        t.device = static_cast<int8_t>(device_);
        t.address = e.address;
        t.size = e.size;
        t.requested_size = bridge::requested_size_of(t.kind, e.size);
        t.stream = e.stream;
    }
    std::vector<snapshot::trace_entry> entries;

  private:
    int device_;
};

// The actions a replay reproduces, in the order the comparison checks them.
bool compared(action a) {
    return a != action::snapshot && a != action::annotation_start && a != action::annotation_end &&
           a != action::annotation_marker;
}

bool same_entry(const snapshot::trace_entry& a, const snapshot::trace_entry& b) {
    return a.kind == b.kind && a.address == b.address && a.size == b.size && a.stream == b.stream;
}

// What others held on the device at the oom entry `i`: the original found it this full (the
// entry records the free bytes), and whatever it did not hold itself, others did.
uint64_t external_usage_at(const detail::trace_plan& plan,
                           const std::vector<snapshot::trace_entry>& entries, size_t i,
                           uint64_t total) {
    const uint64_t held = plan.reserved_at[i] + entries[i].address;
    return held < total ? total - held : 0;
}

// empty_cache calls a trace cannot show (they freed nothing), made after one of its steps.
struct unseen_syncs {
    static constexpr size_t at_start = SIZE_MAX;
    int count = 0;
    size_t after_step = at_start;
};

// One replay with the ambiguous steps decided by `flipped` (1 = the second reading of
// trace_plan.hpp: an empty_cache as a private pool emptying itself, or the other reading of a
// release_run or complete_before_release). With `expected` given, it stops at the first entry
// that differs from the original and reports that entry's index in the original trace through
// `mismatch`.
replay_result run_once(const std::vector<snapshot::trace_entry>& entries,
                       const detail::trace_plan& plan, const replay_options& options,
                       uint64_t total, const detail::final_pool_map& final_pools,
                       const std::vector<uint8_t>& flipped, const unseen_syncs& unseen,
                       const std::vector<size_t>* expected, size_t& mismatch) {
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
    detail::pool_tracker pools(plan, entries, final_pools, flipped, allocator);

    replay_result result;
    // Trace address -> replayed address of live allocations (they differ in what-if runs).
    std::unordered_map<uint64_t, device_address> live;
    std::unordered_map<uint64_t, stream_handle> deferred;  // trace address -> its wait stream
    uint64_t peak_allocated = 0, peak_reserved = 0;
    size_t produced = 0, compared_so_far = 0;
    mismatch = entries.size();

    auto complete_deferred = [&](const snapshot::trace_entry& e) {
        auto it = deferred.find(e.address);
        if (it != deferred.end()) {
            dev.complete_stream(it->second);
            deferred.erase(it);
            allocator.process_events();
        }
    };

    // Others held memory on the device from the start: as much as the first OOM shows.
    for (size_t i = 0; i < entries.size(); ++i) {
        if (plan.steps[i] == detail::step_kind::allocate_oom) {
            dev.set_external_usage(external_usage_at(plan, entries, i, total));
            break;
        }
    }
    if (unseen.after_step == unseen_syncs::at_start) {
        for (int k = 0; k < unseen.count; ++k) {
            allocator.empty_cache();
        }
    }
    for (size_t i = 0; i < entries.size(); ++i) {
        const auto& e = entries[i];
        const bool flip = flipped[i] != 0;
        if (i == options.release_private_pools_before) {
            pools.release_held_pools();
        }
        try {
            switch (plan.steps[i]) {
                case detail::step_kind::allocate:
                case detail::step_kind::allocate_oom: {
                    const bool expected_to_fail = plan.steps[i] == detail::step_kind::allocate_oom;
                    if (expected_to_fail) {
                        dev.set_external_usage(external_usage_at(plan, entries, i, total));
                    }
                    const pool_id pool = pools.pool_for(i, e);
                    try {
                        const device_address a = pools.allocate(pool, e.size, e.stream);
                        if (expected_to_fail) {
                            allocator.free(a);  // the original failed here: do not keep it
                        } else {
                            live[e.address] = a;
                            ++result.allocations;
                        }
                    } catch (const out_of_memory_error&) {
                        ++result.ooms;
                        result.oom_entries.push_back(i);
                        if (!result.first_oom_entry) {
                            result.first_oom_entry = i;
                        }
                        if (options.stop_at_oom && !expected_to_fail) {
                            i = entries.size();
                        }
                    }
                    break;
                }
                case detail::step_kind::free:
                case detail::step_kind::free_deferred: {
                    auto it = live.find(e.address);
                    if (it == live.end()) {
                        ++result.unmatched_frees;  // allocated before the trace began, or failed
                        break;
                    }
                    if (plan.steps[i] == detail::step_kind::free_deferred) {
                        const stream_handle wait = first_deferral_stream + plan.completion[i];
                        allocator.record_stream(it->second, wait);
                        deferred[e.address] = wait;
                    }
                    allocator.free(it->second);
                    live.erase(it);
                    break;
                }
                case detail::step_kind::complete_before_release: {
                    // Either the allocation's own event check completed it (complete it now)
                    // or the synchronization on its release path did (the allocator will).
                    // When releases follow, without garbage collection or oversize releases,
                    // the synchronization is the likelier: it gives the same outcome unless
                    // completing now would have let the allocation reuse the block, which the
                    // original then did not do. Otherwise the event check is.
                    const bool leave_to_release =
                        plan.releases_follow[i] &&
                        options.config.garbage_collection_threshold == 0.0 &&
                        options.config.max_split_size == size_rules::unlimited;
                    if (leave_to_release == flip) {
                        complete_deferred(e);
                    }
                    break;
                }
                case detail::step_kind::complete_free:
                    complete_deferred(e);
                    break;
                case detail::step_kind::empty_cache:
                    pools.release_pools_freed_at(i);
                    if (const auto only = pools.only_pools_freed_at(i); !only.empty()) {
                        // A MemPool going away empties itself (emptyCache of its id).
                        for (const pool_id& pool : only) {
                            allocator.empty_cache(pool);
                        }
                    } else {
                        allocator.empty_cache();
                    }
                    break;
                case detail::step_kind::release_run: {
                    pools.release_pools_freed_at(i);
                    // The allocation's own releases, or an empty_cache before it: by default
                    // what the allocator's state says the allocation would do.
                    const size_t request = plan.next_request[i];
                    const bool allocation_releases =
                        request < entries.size() &&
                        allocator.would_release_memory(entries[request].size,
                                                       entries[request].stream);
                    if (allocation_releases == flip) {
                        allocator.empty_cache();
                    }
                    break;
                }
                case detail::step_kind::snapshot:
                    allocator.snapshot(true);
                    break;
                case detail::step_kind::consequence:
                    break;
            }
        } catch (const usage_error&) {
            // Only a replay that already diverged frees what it does not hold: count it and go
            // on, so the comparison can point at the first difference.
            ++result.unmatched_frees;
        }
        if (unseen.count > 0 && i == unseen.after_step) {
            // empty_cache calls that freed nothing leave no entry, only synchronizations.
            for (int k = 0; k < unseen.count; ++k) {
                allocator.empty_cache();
            }
        }
        if (expected) {
            for (; produced < collector.entries.size(); ++produced) {
                const auto& mine = collector.entries[produced];
                if (!compared(mine.kind)) {
                    continue;
                }
                if (compared_so_far >= expected->size() ||
                    !same_entry(mine, entries[(*expected)[compared_so_far]])) {
                    mismatch = compared_so_far < expected->size() ? (*expected)[compared_so_far]
                                                                  : entries.size() - 1;
                    allocator.set_observer(nullptr);
                    return result;
                }
                ++compared_so_far;
            }
        }
        const device_stats s = allocator.stats();
        peak_allocated =
            std::max<uint64_t>(peak_allocated, static_cast<uint64_t>(s.allocated_bytes[0].current));
        peak_reserved =
            std::max<uint64_t>(peak_reserved, static_cast<uint64_t>(s.reserved_bytes[0].current));
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
    out.settings = bridge::to_snapshot_settings(options.config);
    for (const segment_info& s : allocator.snapshot(false)) {
        out.segments.push_back(bridge::to_snapshot_segment(s, options.device));
    }
    out.trace_for(options.device).entries = std::move(collector.entries);
    out.stats[options.device] = result.stats;
    return result;
}

}  // namespace

device_total device_total_of(const snapshot::snapshot& input, const replay_options& options) {
    if (options.device_memory) {
        return {options.device_memory, device_total_source::option};
    }
    for (const auto& d : input.info.devices) {
        if (d.device == options.device && d.total_memory) {
            return {d.total_memory, device_total_source::recorded};
        }
    }
    return {default_device_memory, device_total_source::assumed};
}

replay_result replay_trace(const snapshot::snapshot& input, const replay_options& options) {
    const snapshot::device_trace* trace = input.find_trace(options.device);
    if (!trace) {
        throw std::runtime_error("replay: the snapshot has no trace for device " +
                                 std::to_string(options.device));
    }
    const auto& entries = trace->entries;
    const uint64_t total = device_total_of(input, options).bytes;
    const detail::trace_plan plan = detail::plan_trace(entries, total);
    const detail::final_pool_map final_pools = detail::final_pools_of(input, options.device);
    // The likelier reading of each step first: a run that gives back a small segment before a
    // large one empties a private pool.
    std::vector<uint8_t> flipped(entries.size(), 0);
    for (size_t i = 0; i < entries.size(); ++i) {
        flipped[i] = plan.private_part_start[i] != detail::trace_plan::none;
    }
    size_t mismatch = entries.size();
    if (!options.reuse_trace_addresses) {
        return run_once(entries, plan, options, total, final_pools, flipped, unseen_syncs{},
                        nullptr, mismatch);  // what-if
    }

    // A trace does not say everything: a few steps have two readings (see trace_plan.hpp).
    // Replay with the likelier reading of each; where the replay departs from the original (or
    // ends with other counters), try the other readings of the open steps just before that
    // point, fewest changes first and explicit empty_cache readings last (programs rarely call
    // it), and keep the first combination that carries the replay further.
    std::vector<size_t> expected;
    for (size_t i = 0; i < entries.size(); ++i) {
        if (compared(entries[i].kind)) {
            expected.push_back(i);
        }
    }
    std::vector<size_t> ambiguous;
    for (size_t i = 0; i < entries.size(); ++i) {
        if (plan.steps[i] == detail::step_kind::release_run ||
            plan.steps[i] == detail::step_kind::complete_before_release ||
            plan.private_part_start[i] != detail::trace_plan::none) {
            ambiguous.push_back(i);
        }
    }
    std::optional<replay_result> matched;  // the run that matched the original entirely
    unseen_syncs unseen;
    // The counters the replay got wrong, once its trace matched entirely.
    auto counters_missed = [&](const replay_result& r) {
        std::vector<std::string> missed;
        for (const auto& [key, value] : *options.expected_stats) {
            auto found = r.stats.find(key);
            if (found != r.stats.end() && found->second != value) {
                missed.push_back(key);
            }
        }
        return missed;
    };
    // Where empty_cache calls that freed nothing may have been: right after a visible release
    // (torch.cuda.empty_cache() after a MemPool emptied itself), the latest first, or before
    // anything was cached.
    std::vector<size_t> release_steps;
    for (size_t i = entries.size(); i-- > 0 && release_steps.size() < 8;) {
        if (plan.steps[i] == detail::step_kind::empty_cache ||
            plan.steps[i] == detail::step_kind::release_run) {
            size_t end = i;
            while (end + 1 < entries.size() &&
                   plan.steps[end + 1] == detail::step_kind::consequence &&
                   (entries[end + 1].kind == action::segment_free ||
                    entries[end + 1].kind == action::segment_unmap)) {
                ++end;
            }
            release_steps.push_back(end);
        }
    }
    release_steps.push_back(unseen_syncs::at_start);
    auto attempt = [&](const std::vector<uint8_t>& readings) {
        size_t where = entries.size();
        replay_result r = run_once(entries, plan, options, total, final_pools, readings, unseen,
                                   &expected, where);
        if (where == entries.size() && options.expected_stats) {
            std::vector<std::string> missed = counters_missed(r);
            const int64_t shortfall = missed == std::vector<std::string>{"num_sync_all_streams"}
                                          ? options.expected_stats->at("num_sync_all_streams") -
                                                r.stats.at("num_sync_all_streams")
                                          : 0;
            for (size_t k = 0; shortfall > 0 && k < release_steps.size(); ++k) {
                const unseen_syncs trial{static_cast<int>(shortfall), release_steps[k]};
                size_t again = entries.size();
                replay_result with_unseen = run_once(entries, plan, options, total, final_pools,
                                                     readings, trial, &expected, again);
                if (again == entries.size() && counters_missed(with_unseen).empty()) {
                    unseen = trial;
                    r = std::move(with_unseen);
                    missed.clear();
                    break;
                }
            }
            if (!missed.empty()) {
                return entries.size() - 1;  // the trace matches, a counter does not
            }
        }
        if (where == entries.size()) {
            matched = std::move(r);
        }
        return where;
    };
    constexpr int max_runs = 256;
    constexpr size_t window = 8;  // open steps considered before a departure
    int runs = 1;
    size_t reached = attempt(flipped);
    while (reached != entries.size() && runs < max_runs) {
        // The open steps up to the departure, nearest first.
        std::vector<size_t> candidates;
        for (auto it = std::upper_bound(ambiguous.begin(), ambiguous.end(), reached);
             it != ambiguous.begin() && candidates.size() < window;) {
            candidates.push_back(*--it);
        }
        // Subsets ordered by how many release runs they read as empty_cache, then by size.
        std::vector<uint32_t> subsets;
        for (uint32_t mask = 1; mask < (1u << candidates.size()); ++mask) {
            subsets.push_back(mask);
        }
        auto cost = [&](uint32_t mask) {
            int empty_caches = 0;
            for (size_t b = 0; b < candidates.size(); ++b) {
                if ((mask >> b & 1) &&
                    plan.steps[candidates[b]] == detail::step_kind::release_run &&
                    !flipped[candidates[b]]) {
                    ++empty_caches;
                }
            }
            return std::make_pair(empty_caches, std::popcount(mask));
        };
        std::stable_sort(subsets.begin(), subsets.end(),
                         [&](uint32_t a, uint32_t b) { return cost(a) < cost(b); });
        bool moved_on = false;
        for (uint32_t mask : subsets) {
            if (runs >= max_runs) {
                break;
            }
            std::vector<uint8_t> trial = flipped;
            for (size_t b = 0; b < candidates.size(); ++b) {
                if (mask >> b & 1) {
                    trial[candidates[b]] ^= 1;
                }
            }
            ++runs;
            const size_t now = attempt(trial);
            if (now > reached) {
                flipped = trial;
                reached = now;
                moved_on = true;
                break;
            }
        }
        if (!moved_on) {
            break;
        }
    }
    if (matched) {
        return std::move(*matched);
    }
    // No reading matched everything: the full replay with those that matched furthest.
    return run_once(entries, plan, options, total, final_pools, flipped, unseen, nullptr, mismatch);
}

}  // namespace memtrail::replay

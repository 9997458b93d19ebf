#include "trace_plan.hpp"

#include <map>
#include <unordered_map>

#include "memtrail/rules/size_rules.hpp"

namespace memtrail::replay::detail {

namespace {

using snapshot::action;

bool makes_segment(action a) {
    return a == action::segment_alloc || a == action::segment_map || a == action::oom;
}

bool is_segment_release(action a) {
    return a == action::segment_free || a == action::segment_unmap;
}

// For every index i (and n), the first index at or after i (n if none) that ...
struct run_ends {
    std::vector<size_t> completions_end;    // ... is not a free_completed
    std::vector<size_t> segment_frees_end;  // ... is not a segment_free or segment_unmap
    std::vector<size_t> releases_end;       // ... is none of those three
    std::vector<size_t> next_request;       // ... is an alloc or an oom: the next request
};

run_ends find_run_ends(const std::vector<snapshot::trace_entry>& entries) {
    const size_t n = entries.size();
    run_ends ends;
    ends.completions_end.assign(n + 1, n);
    ends.segment_frees_end.assign(n + 1, n);
    ends.releases_end.assign(n + 1, n);
    ends.next_request.assign(n + 1, n);
    for (size_t i = n; i-- > 0;) {
        const action a = entries[i].kind;
        ends.completions_end[i] = a == action::free_completed ? ends.completions_end[i + 1] : i;
        ends.segment_frees_end[i] = is_segment_release(a) ? ends.segment_frees_end[i + 1] : i;
        ends.releases_end[i] =
            is_segment_release(a) || a == action::free_completed ? ends.releases_end[i + 1] : i;
        ends.next_request[i] =
            a == action::alloc || a == action::oom ? i : ends.next_request[i + 1];
    }
    return ends;
}

}  // namespace

trace_plan plan_trace(const std::vector<snapshot::trace_entry>& entries, uint64_t device_total) {
    trace_plan plan;
    const size_t n = entries.size();
    plan.steps.assign(n, step_kind::consequence);
    plan.next_request.assign(n, n);
    plan.completion.assign(n, n);
    plan.releases_follow.assign(n, 0);
    std::unordered_map<device_address, size_t> awaiting;  // address -> its deferred free

    // Expandable segments reserve room for 1 1/8 of the device in pages of 2 MiB (small pool)
    // or 20 MiB (large pool); a map outside every reservation made so far starts a new one.
    std::map<device_address, device_address> reservations;  // base -> end
    auto reserved = [&](device_address a) {
        auto it = reservations.upper_bound(a);
        return it != reservations.begin() && a < std::prev(it)->second;
    };
    // Where each run ends and the next request, looked up from every index in one pass from the
    // back, so a run of a million frees costs a million steps, not a million squared.
    const run_ends ends = find_run_ends(entries);

    plan.segment_creator.assign(n, n);
    plan.new_segment.assign(n, 0);
    plan.frees_in_run.assign(n, {});
    plan.private_part_start.assign(n, trace_plan::none);
    plan.lasting_segment.assign(n, 0);
    plan.reservation_end.assign(n, 0);
    plan.reserved_at.assign(n, 0);
    plan.held_private.assign(n, 0);
    std::unordered_map<size_t, size_t> live_blocks;  // creator -> its allocations not yet freed
    // Live segments (start -> end, creator) and expandable reservations (base -> creator).
    std::map<device_address, std::pair<device_address, size_t>> segments;
    std::map<device_address, size_t> reservation_creator;
    auto creator_of = [&](device_address a) -> size_t {
        auto it = segments.upper_bound(a);
        if (it != segments.begin() && a < std::prev(it)->second.first) {
            return std::prev(it)->second.second;
        }
        auto r = reservation_creator.upper_bound(a);
        if (r != reservation_creator.begin() && reserved(a)) {
            return std::prev(r)->second;
        }
        return n;
    };
    // The next alloc/oom after an index tells which pool a segment_map served.
    auto next_request_size = [&](size_t request) {
        return request < n ? entries[request].size : 0;
    };
    uint64_t reserved_bytes = 0;
    size_t last_request = 0;
    size_t run_start = n;                       // the step of the release run under way
    size_t run_first_small = trace_plan::none;  // in frees_in_run of the run under way

    bool in_release_run = false;
    for (size_t i = 0; i < n; ++i) {
        const auto& e = entries[i];
        switch (e.kind) {
            case action::alloc:
                plan.steps[i] = step_kind::allocate;
                plan.segment_creator[i] = creator_of(e.address);
                plan.new_segment[i] =
                    plan.segment_creator[i] < n && plan.segment_creator[i] >= last_request;
                ++live_blocks[plan.segment_creator[i]];
                last_request = i;
                break;
            case action::oom:
                plan.steps[i] = step_kind::allocate_oom;
                plan.reserved_at[i] = reserved_bytes;
                // Segments made by segment_alloc only: an expandable segment's pages are
                // unmapped by other rules.
                for (const auto& [start, end_and_creator] : segments) {
                    const size_t creator = end_and_creator.second;
                    if (entries[creator].kind == action::segment_alloc && !live_blocks[creator]) {
                        plan.held_private[creator] = 1;
                    }
                }
                last_request = i;
                break;
            case action::free_requested: {
                const bool completes_now = i + 1 < n &&
                                           entries[i + 1].kind == action::free_completed &&
                                           entries[i + 1].address == e.address;
                plan.steps[i] = completes_now ? step_kind::free : step_kind::free_deferred;
                if (!completes_now) {
                    awaiting[e.address] = i;
                }
                break;
            }
            case action::free_completed: {
                if (const size_t creator = creator_of(e.address);
                    creator < n && live_blocks[creator] > 0) {
                    --live_blocks[creator];
                }
                if (auto it = awaiting.find(e.address); it != awaiting.end()) {
                    plan.completion[it->second] = i;
                    awaiting.erase(it);
                }
                const bool follows_its_request = i > 0 &&
                                                 entries[i - 1].kind == action::free_requested &&
                                                 entries[i - 1].address == e.address;
                // Inside a run of releases the allocator synchronizes pending frees itself.
                if (follows_its_request || in_release_run) {
                    plan.steps[i] = step_kind::consequence;
                    break;
                }
                const size_t j = ends.completions_end[i];
                const size_t k = ends.segment_frees_end[j];
                const bool before_new_segment = k < n && makes_segment(entries[k].kind);
                plan.steps[i] = before_new_segment ? step_kind::complete_before_release
                                                   : step_kind::complete_free;
                plan.releases_follow[i] = k > j;
                break;
            }
            case action::segment_free:
            case action::segment_unmap: {
                // An allocation only gives memory back on its way to a new segment (garbage
                // collection, or the release after a failed device allocation), so a run of
                // frees that does not lead to one is an empty_cache. One that does may be
                // either; the replay decides from the allocator's state.
                const size_t j = ends.releases_end[i];
                const size_t freed = creator_of(e.address);
                if (e.kind == action::segment_free) {
                    segments.erase(e.address);
                    reserved_bytes -= e.size;
                } else {
                    reserved_bytes -= e.size;
                }
                if (!in_release_run) {
                    run_start = i;
                    run_first_small = trace_plan::none;
                }
                if (e.kind == action::segment_free) {
                    const bool small = e.size == size_rules::small_buffer;
                    if (small && run_first_small == trace_plan::none) {
                        run_first_small = plan.frees_in_run[run_start].size();
                    }
                    if (!small && run_first_small != trace_plan::none &&
                        plan.steps[run_start] == step_kind::empty_cache) {
                        plan.private_part_start[run_start] = run_first_small;
                    }
                }
                if (freed < n && e.kind == action::segment_free) {
                    plan.lasting_segment[freed] = 0;
                }
                if (freed < n) {
                    plan.frees_in_run[run_start].push_back(freed);
                }
                if (!in_release_run) {
                    if (j < n && makes_segment(entries[j].kind)) {
                        plan.steps[i] = step_kind::release_run;
                        plan.next_request[i] = ends.next_request[j];
                    } else {
                        plan.steps[i] = step_kind::empty_cache;
                    }
                }
                in_release_run = true;
                break;
            }
            case action::segment_alloc:
                plan.device_addresses.push_back(e.address);
                segments[e.address] = {e.address + e.size, i};
                plan.lasting_segment[i] = e.address;
                reserved_bytes += e.size;
                break;
            case action::segment_map:
                reserved_bytes += e.size;
                if (!reserved(e.address)) {
                    reservation_creator[e.address] = i;
                    plan.lasting_segment[i] = e.address;
                    const uint64_t page = next_request_size(ends.next_request[i]) <= (1ull << 20)
                                              ? (2ull << 20)
                                              : (20ull << 20);
                    const uint64_t space = device_total + device_total / 8;
                    const uint64_t pages = (space + page - 1) / page;
                    reservations[e.address] = e.address + pages * page;
                    plan.reservation_end[i] = e.address + pages * page;
                    plan.device_addresses.push_back(e.address);
                }
                break;
            case action::snapshot:
                plan.steps[i] = step_kind::snapshot;
                break;
            default:
                break;  // annotations drive nothing
        }
        if (e.kind != action::segment_free && e.kind != action::segment_unmap &&
            e.kind != action::free_completed) {
            in_release_run = false;
        }
    }
    return plan;
}

}  // namespace memtrail::replay::detail

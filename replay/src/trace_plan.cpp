#include "detail/trace_plan.hpp"

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

// Reads the trace once, front to back, with one method per kind of entry.
class planner {
  public:
    planner(const std::vector<snapshot::trace_entry>& entries, uint64_t device_total)
        : entries_(entries),
          n_(entries.size()),
          device_total_(device_total),
          ends_(find_run_ends(entries)) {
        plan_.steps.assign(n_, step_kind::consequence);
        plan_.next_request.assign(n_, n_);
        plan_.completion.assign(n_, n_);
        plan_.releases_follow.assign(n_, 0);
        plan_.segment_creator.assign(n_, n_);
        plan_.new_segment.assign(n_, 0);
        plan_.frees_in_run.assign(n_, {});
        plan_.private_part_start.assign(n_, trace_plan::none);
        plan_.lasting_segment.assign(n_, 0);
        plan_.reservation_end.assign(n_, 0);
        plan_.reserved_at.assign(n_, 0);
        plan_.held_private.assign(n_, 0);
    }

    trace_plan plan() {
        for (size_t i = 0; i < n_; ++i) {
            const action a = entries_[i].kind;
            switch (a) {
                case action::alloc:
                    on_alloc(i);
                    break;
                case action::oom:
                    on_oom(i);
                    break;
                case action::free_requested:
                    on_free_requested(i);
                    break;
                case action::free_completed:
                    on_free_completed(i);
                    break;
                case action::segment_free:
                case action::segment_unmap:
                    on_segment_release(i);
                    break;
                case action::segment_alloc:
                    on_segment_alloc(i);
                    break;
                case action::segment_map:
                    on_segment_map(i);
                    break;
                case action::snapshot:
                    plan_.steps[i] = step_kind::snapshot;
                    break;
                default:
                    break;  // annotations drive nothing
            }
            if (!is_segment_release(a) && a != action::free_completed) {
                in_release_run_ = false;
            }
        }
        return std::move(plan_);
    }

  private:
    void on_alloc(size_t i);
    void on_oom(size_t i);
    void on_free_requested(size_t i);
    void on_free_completed(size_t i);
    void on_segment_release(size_t i);
    void on_segment_alloc(size_t i);
    void on_segment_map(size_t i);

    bool reserved(device_address a) const {
        auto it = reservations_.upper_bound(a);
        return it != reservations_.begin() && a < std::prev(it)->second;
    }
    // The entry that made the segment (or reserved the expandable segment) holding `a`; n if none.
    size_t creator_of(device_address a) const {
        auto it = segments_.upper_bound(a);
        if (it != segments_.begin() && a < std::prev(it)->second.first) {
            return std::prev(it)->second.second;
        }
        auto r = reservation_creator_.upper_bound(a);
        if (r != reservation_creator_.begin() && reserved(a)) {
            return std::prev(r)->second;
        }
        return n_;
    }

    const std::vector<snapshot::trace_entry>& entries_;
    const size_t n_;
    const uint64_t device_total_;
    // Where each run ends and the next request, looked up from every index in one pass from the
    // back, so a run of a million frees costs a million steps, not a million squared.
    const run_ends ends_;
    trace_plan plan_;
    std::unordered_map<device_address, size_t> awaiting_;  // address -> its deferred free
    // Expandable segments reserve room for 1 1/8 of the device in pages of 2 MiB (small pool)
    // or 20 MiB (large pool); a map outside every reservation made so far starts a new one.
    std::map<device_address, device_address> reservations_;  // base -> end
    std::unordered_map<size_t, size_t> live_blocks_;  // creator -> its allocations not yet freed
    // Live segments (start -> end, creator) and expandable reservations (base -> creator).
    std::map<device_address, std::pair<device_address, size_t>> segments_;
    std::map<device_address, size_t> reservation_creator_;
    uint64_t reserved_bytes_ = 0;
    size_t last_request_ = 0;
    size_t run_start_ = 0;                       // the step of the release run under way
    size_t run_first_small_ = trace_plan::none;  // in frees_in_run of the run under way
    bool in_release_run_ = false;
};

void planner::on_alloc(size_t i) {
    const auto& e = entries_[i];
    plan_.steps[i] = step_kind::allocate;
    plan_.segment_creator[i] = creator_of(e.address);
    plan_.new_segment[i] =
        plan_.segment_creator[i] < n_ && plan_.segment_creator[i] >= last_request_;
    ++live_blocks_[plan_.segment_creator[i]];
    last_request_ = i;
}

void planner::on_oom(size_t i) {
    plan_.steps[i] = step_kind::allocate_oom;
    plan_.reserved_at[i] = reserved_bytes_;
    // Segments made by segment_alloc only: an expandable segment's pages are unmapped by other
    // rules.
    for (const auto& [start, end_and_creator] : segments_) {
        const size_t creator = end_and_creator.second;
        if (entries_[creator].kind == action::segment_alloc && !live_blocks_[creator]) {
            plan_.held_private[creator] = 1;
        }
    }
    last_request_ = i;
}

void planner::on_free_requested(size_t i) {
    const auto& e = entries_[i];
    const bool completes_now = i + 1 < n_ && entries_[i + 1].kind == action::free_completed &&
                               entries_[i + 1].address == e.address;
    plan_.steps[i] = completes_now ? step_kind::free : step_kind::free_deferred;
    if (!completes_now) {
        awaiting_[e.address] = i;
    }
}

void planner::on_free_completed(size_t i) {
    const auto& e = entries_[i];
    if (const size_t creator = creator_of(e.address); creator < n_ && live_blocks_[creator] > 0) {
        --live_blocks_[creator];
    }
    if (auto it = awaiting_.find(e.address); it != awaiting_.end()) {
        plan_.completion[it->second] = i;
        awaiting_.erase(it);
    }
    const bool follows_its_request = i > 0 && entries_[i - 1].kind == action::free_requested &&
                                     entries_[i - 1].address == e.address;
    // Inside a run of releases the allocator synchronizes pending frees itself.
    if (follows_its_request || in_release_run_) {
        plan_.steps[i] = step_kind::consequence;
        return;
    }
    const size_t j = ends_.completions_end[i];
    const size_t k = ends_.segment_frees_end[j];
    const bool before_new_segment = k < n_ && makes_segment(entries_[k].kind);
    plan_.steps[i] =
        before_new_segment ? step_kind::complete_before_release : step_kind::complete_free;
    plan_.releases_follow[i] = k > j;
}

void planner::on_segment_release(size_t i) {
    // An allocation only gives memory back on its way to a new segment (garbage collection, or
    // the release after a failed device allocation), so a run of frees that does not lead to one
    // is an empty_cache. One that does may be either; the replay decides from the allocator's
    // state.
    const auto& e = entries_[i];
    const size_t j = ends_.releases_end[i];
    const size_t freed = creator_of(e.address);
    if (e.kind == action::segment_free) {
        segments_.erase(e.address);
    }
    reserved_bytes_ -= e.size;
    if (!in_release_run_) {
        run_start_ = i;
        run_first_small_ = trace_plan::none;
    }
    if (e.kind == action::segment_free) {
        const bool small = e.size == size_rules::small_buffer;
        if (small && run_first_small_ == trace_plan::none) {
            run_first_small_ = plan_.frees_in_run[run_start_].size();
        }
        if (!small && run_first_small_ != trace_plan::none &&
            plan_.steps[run_start_] == step_kind::empty_cache) {
            plan_.private_part_start[run_start_] = run_first_small_;
        }
    }
    if (freed < n_ && e.kind == action::segment_free) {
        plan_.lasting_segment[freed] = 0;
    }
    if (freed < n_) {
        plan_.frees_in_run[run_start_].push_back(freed);
    }
    if (!in_release_run_) {
        if (j < n_ && makes_segment(entries_[j].kind)) {
            plan_.steps[i] = step_kind::release_run;
            plan_.next_request[i] = ends_.next_request[j];
        } else {
            plan_.steps[i] = step_kind::empty_cache;
        }
    }
    in_release_run_ = true;
}

void planner::on_segment_alloc(size_t i) {
    const auto& e = entries_[i];
    plan_.device_addresses.push_back(e.address);
    segments_[e.address] = {e.address + e.size, i};
    plan_.lasting_segment[i] = e.address;
    reserved_bytes_ += e.size;
}

void planner::on_segment_map(size_t i) {
    const auto& e = entries_[i];
    reserved_bytes_ += e.size;
    if (reserved(e.address)) {
        return;
    }
    reservation_creator_[e.address] = i;
    plan_.lasting_segment[i] = e.address;
    // The next alloc/oom after a map tells which pool it served.
    const size_t request = ends_.next_request[i];
    const uint64_t request_size = request < n_ ? entries_[request].size : 0;
    const uint64_t page = request_size <= (1ull << 20) ? (2ull << 20) : (20ull << 20);
    const uint64_t space = device_total_ + device_total_ / 8;
    const uint64_t pages = (space + page - 1) / page;
    reservations_[e.address] = e.address + pages * page;
    plan_.reservation_end[i] = e.address + pages * page;
    plan_.device_addresses.push_back(e.address);
}

}  // namespace

trace_plan plan_trace(const std::vector<snapshot::trace_entry>& entries, uint64_t device_total) {
    return planner(entries, device_total).plan();
}

}  // namespace memtrail::replay::detail

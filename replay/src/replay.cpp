// Replays a trace through memtrail's allocator on the simulated device: the plan of its requests
// (trace_plan.cpp), one replay per reading of its ambiguous steps (replayer.cpp), and the search
// for the readings that reproduce the original.

#include <algorithm>
#include <bit>
#include <optional>
#include <stdexcept>
#include <string>

#include "detail/replayer.hpp"
#include "memtrail/replay/replay.hpp"

namespace memtrail::replay {

namespace {

using snapshot::action;

constexpr uint64_t default_device_memory = 80ull << 30;

// A trace does not say everything: a few steps have two readings (see trace_plan.hpp). The search
// replays with the likelier reading of each; where the replay departs from the original (or
// ends with other counters), it tries the other readings of the open steps just before that
// point, fewest changes first and explicit empty_cache readings last (programs rarely call it),
// and keeps the first combination that carries the replay further.
class reading_search {
  public:
    explicit reading_search(const detail::replay_inputs& in)
        : in_(in),
          expected_(compared_entries(in.entries)),
          ambiguous_(ambiguous_steps(in.entries, in.plan)),
          release_steps_(release_steps(in.entries, in.plan)) {}

    // Searches from the readings `flipped`, which it leaves at the ones that went furthest.
    replay_result search(std::vector<uint8_t>& flipped);

  private:
    static std::vector<size_t> compared_entries(const std::vector<snapshot::trace_entry>& entries);
    static std::vector<size_t> ambiguous_steps(const std::vector<snapshot::trace_entry>& entries,
                                               const detail::trace_plan& plan);
    static std::vector<size_t> release_steps(const std::vector<snapshot::trace_entry>& entries,
                                             const detail::trace_plan& plan);
    // Replays with `readings`; returns how far it matched the original (entries.size(): all of
    // it), keeping the run that matched entirely.
    size_t attempt(const std::vector<uint8_t>& readings);
    // The counters the replay got wrong, once its trace matched entirely.
    std::vector<std::string> counters_missed(const replay_result& r) const;
    // The other readings of the open steps up to `reached` (nearest first), as masks over those
    // steps, ordered by how many release runs they read as empty_cache, then by size.
    std::vector<uint32_t> trials_before(size_t reached, const std::vector<uint8_t>& flipped,
                                        std::vector<size_t>& candidates) const;

    static constexpr int max_runs = 256;
    static constexpr size_t window = 8;  // open steps considered before a departure

    const detail::replay_inputs& in_;
    const std::vector<size_t> expected_;
    const std::vector<size_t> ambiguous_;
    // Where empty_cache calls that freed nothing may have been: right after a visible release
    // (torch.cuda.empty_cache() after a MemPool emptied itself), the latest first, or before
    // anything was cached.
    const std::vector<size_t> release_steps_;
    detail::unseen_syncs unseen_;
    std::optional<replay_result> matched_;  // the run that matched the original entirely
};

std::vector<size_t> reading_search::compared_entries(
    const std::vector<snapshot::trace_entry>& entries) {
    std::vector<size_t> expected;
    for (size_t i = 0; i < entries.size(); ++i) {
        if (detail::compared_action(entries[i].kind)) {
            expected.push_back(i);
        }
    }
    return expected;
}

std::vector<size_t> reading_search::ambiguous_steps(
    const std::vector<snapshot::trace_entry>& entries, const detail::trace_plan& plan) {
    std::vector<size_t> ambiguous;
    for (size_t i = 0; i < entries.size(); ++i) {
        if (plan.steps[i] == detail::step_kind::release_run ||
            plan.steps[i] == detail::step_kind::complete_before_release ||
            plan.private_part_start[i] != detail::trace_plan::none) {
            ambiguous.push_back(i);
        }
    }
    return ambiguous;
}

std::vector<size_t> reading_search::release_steps(const std::vector<snapshot::trace_entry>& entries,
                                                  const detail::trace_plan& plan) {
    std::vector<size_t> steps;
    for (size_t i = entries.size(); i-- > 0 && steps.size() < 8;) {
        if (plan.steps[i] == detail::step_kind::empty_cache ||
            plan.steps[i] == detail::step_kind::release_run) {
            size_t end = i;
            while (end + 1 < entries.size() &&
                   plan.steps[end + 1] == detail::step_kind::consequence &&
                   (entries[end + 1].kind == action::segment_free ||
                    entries[end + 1].kind == action::segment_unmap)) {
                ++end;
            }
            steps.push_back(end);
        }
    }
    steps.push_back(detail::unseen_syncs::at_start);
    return steps;
}

std::vector<std::string> reading_search::counters_missed(const replay_result& r) const {
    std::vector<std::string> missed;
    for (const auto& [key, value] : *in_.options.expected_stats) {
        auto found = r.stats.find(key);
        if (found != r.stats.end() && found->second != value) {
            missed.push_back(key);
        }
    }
    return missed;
}

size_t reading_search::attempt(const std::vector<uint8_t>& readings) {
    const size_t all = in_.entries.size();
    size_t where = all;
    replay_result r = detail::run_once(in_, {readings, unseen_}, &expected_, where);
    if (where == all && in_.options.expected_stats) {
        std::vector<std::string> missed = counters_missed(r);
        const int64_t shortfall = missed == std::vector<std::string>{"num_sync_all_streams"}
                                      ? in_.options.expected_stats->at("num_sync_all_streams") -
                                            r.stats.at("num_sync_all_streams")
                                      : 0;
        for (size_t k = 0; shortfall > 0 && k < release_steps_.size(); ++k) {
            const detail::unseen_syncs trial{static_cast<int>(shortfall), release_steps_[k]};
            size_t again = all;
            replay_result with_unseen = detail::run_once(in_, {readings, trial}, &expected_, again);
            if (again == all && counters_missed(with_unseen).empty()) {
                unseen_ = trial;
                r = std::move(with_unseen);
                missed.clear();
                break;
            }
        }
        if (!missed.empty()) {
            return all - 1;  // the trace matches, a counter does not
        }
    }
    if (where == all) {
        matched_ = std::move(r);
    }
    return where;
}

std::vector<uint32_t> reading_search::trials_before(size_t reached,
                                                    const std::vector<uint8_t>& flipped,
                                                    std::vector<size_t>& candidates) const {
    candidates.clear();
    for (auto it = std::upper_bound(ambiguous_.begin(), ambiguous_.end(), reached);
         it != ambiguous_.begin() && candidates.size() < window;) {
        candidates.push_back(*--it);
    }
    std::vector<uint32_t> subsets;
    for (uint32_t mask = 1; mask < (1u << candidates.size()); ++mask) {
        subsets.push_back(mask);
    }
    auto cost = [&](uint32_t mask) {
        int empty_caches = 0;
        for (size_t b = 0; b < candidates.size(); ++b) {
            if ((mask >> b & 1) &&
                in_.plan.steps[candidates[b]] == detail::step_kind::release_run &&
                !flipped[candidates[b]]) {
                ++empty_caches;
            }
        }
        return std::make_pair(empty_caches, std::popcount(mask));
    };
    std::stable_sort(subsets.begin(), subsets.end(),
                     [&](uint32_t a, uint32_t b) { return cost(a) < cost(b); });
    return subsets;
}

replay_result reading_search::search(std::vector<uint8_t>& flipped) {
    int runs = 1;
    size_t reached = attempt(flipped);
    std::vector<size_t> candidates;
    while (reached != in_.entries.size() && runs < max_runs) {
        bool moved_on = false;
        for (uint32_t mask : trials_before(reached, flipped, candidates)) {
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
    if (matched_) {
        return std::move(*matched_);
    }
    // No reading matched everything: the full replay with those that matched furthest.
    size_t mismatch = in_.entries.size();
    return detail::run_once(in_, {flipped, unseen_}, nullptr, mismatch);
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
    const detail::replay_inputs inputs{entries, plan, options, total, final_pools};
    // The likelier reading of each step first: a run that gives back a small segment before a
    // large one empties a private pool.
    std::vector<uint8_t> flipped(entries.size(), 0);
    for (size_t i = 0; i < entries.size(); ++i) {
        flipped[i] = plan.private_part_start[i] != detail::trace_plan::none;
    }
    if (!options.reuse_trace_addresses) {
        size_t mismatch = entries.size();
        return detail::run_once(inputs, {flipped, detail::unseen_syncs{}}, nullptr,
                                mismatch);  // what-if
    }
    return reading_search(inputs).search(flipped);
}

}  // namespace memtrail::replay

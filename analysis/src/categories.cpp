// Categories of allocations. The evidence is gathered in three passes: the frames of every stack
// an allocation or free was recorded under (category_frames.cpp), the training steps and their
// phases or a generation's (category_steps.cpp), then the facts of each allocation, from which
// one rule (category_rules.cpp) gives its category. This file builds the map and answers what
// was live, and in which categories, at any moment.
//
// Index of this file:
// [SECTION] facts of one allocation
// [SECTION] building the map
// [SECTION] the live allocations at any moment
// [SECTION] totals at a moment
// [SECTION] contradictions

#include "memtrail/analysis/categories.hpp"

#include <algorithm>
#include <cctype>
#include <iterator>
#include <limits>
#include <map>
#include <unordered_map>
#include <unordered_set>

#include "detail/category_frames.hpp"
#include "detail/category_rules.hpp"
#include "detail/category_steps.hpp"
#include "memtrail/analysis/size_text.hpp"

namespace memtrail::analysis {

using snapshot::action;

namespace {

constexpr size_t none = no_position;

//-------------------------------------------------------------------------------------------------
// [SECTION] facts of one allocation
//-------------------------------------------------------------------------------------------------

// PyTorch's default CUBLAS_WORKSPACE_CONFIG: ":4096:8" (32 MiB) from Hopper on, ":4096:2:16:8"
// (8,320 KiB) before it; cuBLASLt's own default workspace, CUBLASLT_WORKSPACE_SIZE, 1 MiB.
bool is_cublas_workspace_size(uint64_t requested) {
    constexpr uint64_t KiB = 1024;
    return requested == 4096 * KiB * 8 || requested == 4096 * KiB * 2 + 16 * KiB * 8 ||
           requested == 1024 * KiB;
}

// A free by the very last entry also ends at event_count(): tells it from never freed.
bool freed_in_trace(const device_model& model, const allocation_lifetime& life) {
    const size_t count = model.event_count();
    if (life.end < count) {
        return true;
    }
    if (life.end != count || count == 0 || life.begin >= count) {
        return false;
    }
    const auto& last = model.entry(count - 1);
    return (last.kind == action::free_requested || last.kind == action::free_completed) &&
           last.address == life.address;
}

}  // namespace

//-------------------------------------------------------------------------------------------------
// [SECTION] building the map
//-------------------------------------------------------------------------------------------------

category_map category_map::build(const device_model& model) {
    category_map map(model);
    const auto& lifetimes = model.lifetimes();
    stack_flags flags_of(model.source());
    const annotated_ranges ranges = ranges_of(model);
    const trace_evidence evidence = gather_evidence(model, flags_of, ranges);
    map.kind_ = find_job_kind(evidence, ranges);
    map.steps_ = find_steps(model, evidence, ranges, map.kind_);
    map.generation_ = find_generation(model, evidence);
    const training_steps& steps = map.steps_;
    const phases_found phases = find_phases(model, evidence, steps, map.kind_);

    // A gradient has its parameter's size: what tells a gradient kept across steps
    // (zero_grad(set_to_none=False)) from a cache the backward pass made once.
    std::unordered_set<uint64_t> parameter_sizes;
    for (const auto& life : lifetimes) {
        if ((flags_of.of(life.stack) & module_setup) != 0) {
            parameter_sizes.insert(life.requested_size);
        }
    }

    map.assignments_.resize(lifetimes.size());
    map.freed_.resize(lifetimes.size());
    for (size_t l = 0; l < lifetimes.size(); ++l) {
        const allocation_lifetime& life = lifetimes[l];
        allocation_facts x;
        x.freed = freed_in_trace(model, life);
        x.alloc_entry = life.from_before_trace ? none : life.begin - 1;
        x.free_entry = x.freed && life.end != 0 ? life.end - 1 : none;
        constexpr uint32_t phase_flags = forward | backward | annotated_backward;
        x.made = flags_of.of(life.stack) |
                 (x.alloc_entry == none ? 0 : evidence.entry_flags[x.alloc_entry] & phase_flags);
        x.freed_by = x.free_entry == none ? 0 : evidence.entry_flags[x.free_entry];
        x.in_backward =
            x.alloc_entry == none ? backward_evidence::absent : phases.backward[x.alloc_entry];
        const size_t step = x.alloc_entry == none ? 0 : steps.step_of(x.alloc_entry);
        x.phases = phases.steps[step];
        x.long_lived = !x.freed || (x.free_entry != none && steps.step_of(x.free_entry) > step);
        // Without steps (inference, or one stretch of work), what forward used and outlived is
        // kept for the run: the model loaded before its first forward and freed at the end.
        if (steps.boundaries.empty() && x.phases.forward != none && x.alloc_entry != none &&
            x.alloc_entry < x.phases.forward && x.free_entry != none &&
            x.free_entry > x.phases.forward) {
            x.long_lived = true;
        }
        // Never freed though a whole step went by after its own: kept for the run, as caches
        // are (the last step's results also stay to the end, and are not).
        x.kept_a_step_beyond = !x.freed && step + 2 <= steps.boundaries.size();
        x.parameter_sized = parameter_sizes.contains(life.requested_size);
        x.freed_under_its_own_stack =
            x.free_entry != none && model.entry(x.free_entry).stack == life.stack;
        x.workspace_sized = is_cublas_workspace_size(life.requested_size);
        x.kind = map.kind_;

        const category_rule rule = choose_rule(x);
        const memory_category category = rule_category(rule);
        map.assignments_[l] = {category, rule};
        map.freed_[l] = x.freed ? 1 : 0;
        map.any_known_ = map.any_known_ || category != memory_category::unknown;
        if (life.size != 0 && (life.end > life.begin || !x.freed)) {
            map.changes_.push_back({life.begin, static_cast<int64_t>(life.size), category});
            if (x.freed) {
                map.changes_.push_back({life.end, -static_cast<int64_t>(life.size), category});
            }
        }
    }
    std::stable_sort(map.changes_.begin(), map.changes_.end(),
                     [](const change& x, const change& y) { return x.position < y.position; });
    map.index_live_allocations();
    return map;
}

//-------------------------------------------------------------------------------------------------
// [SECTION] the live allocations at any moment
//-------------------------------------------------------------------------------------------------

bool category_map::live_at(size_t index, size_t position) const {
    const allocation_lifetime& life = model_.lifetimes()[index];
    return life.begin <= position && (position < life.end || freed_[index] == 0);
}

namespace {

// The first lifetime that begins after `position`: device_model keeps them in order of begin.
uint32_t first_begun_after(const std::vector<allocation_lifetime>& lifetimes, size_t position) {
    const auto it =
        std::partition_point(lifetimes.begin(), lifetimes.end(),
                             [&](const allocation_lifetime& l) { return l.begin <= position; });
    return static_cast<uint32_t>(it - lifetimes.begin());
}

}  // namespace

void category_map::collect_live(size_t checkpoint, size_t position,
                                std::vector<uint32_t>& out) const {
    const live_checkpoint& from = live_checkpoints_[checkpoint];
    const size_t live_end = checkpoint + 1 < live_checkpoints_.size()
                                ? live_checkpoints_[checkpoint + 1].live_begin
                                : live_.size();
    for (size_t i = from.live_begin; i < live_end; ++i) {
        if (live_at(live_[i], position)) {
            out.push_back(live_[i]);
        }
    }
    const uint32_t last = first_begun_after(model_.lifetimes(), position);
    for (uint32_t l = from.first_after; l < last; ++l) {
        if (live_at(l, position)) {
            out.push_back(l);
        }
    }
}

// A checkpoint after every few thousand lifetimes begun, and after at least four times as many
// as were live at the one before, so the copies of live sets take at most a quarter of an index
// per lifetime.
void category_map::index_live_allocations() {
    constexpr size_t min_interval = 4096;
    const auto& lifetimes = model_.lifetimes();
    live_checkpoints_.push_back({0, 0, 0});
    std::vector<uint32_t> live;
    while (live_checkpoints_.back().first_after < lifetimes.size()) {
        const live_checkpoint last = live_checkpoints_.back();
        const size_t last_live = live_.size() - last.live_begin;
        const size_t next_first =
            std::min(lifetimes.size(), last.first_after + std::max(min_interval, 4 * last_live));
        const size_t position = lifetimes[next_first - 1].begin;
        live.clear();
        collect_live(live_checkpoints_.size() - 1, position, live);
        live_checkpoints_.push_back(
            {position, first_begun_after(lifetimes, position), live_.size()});
        live_.insert(live_.end(), live.begin(), live.end());
    }
}

std::vector<uint32_t> category_map::live_allocations(size_t position) const {
    const auto after =
        std::upper_bound(live_checkpoints_.begin(), live_checkpoints_.end(), position,
                         [](size_t p, const live_checkpoint& c) { return p < c.position; });
    std::vector<uint32_t> out;
    collect_live(static_cast<size_t>(after - live_checkpoints_.begin()) - 1, position, out);
    return out;
}

std::vector<std::array<uint64_t, memory_category_count>> category_map::bytes_at(
    const std::vector<size_t>& positions) const {
    std::vector<std::array<uint64_t, memory_category_count>> out(positions.size());
    std::array<int64_t, memory_category_count> running{};
    size_t next = 0;
    for (size_t i = 0; i < positions.size(); ++i) {
        while (next < changes_.size() && changes_[next].position <= positions[i]) {
            running[static_cast<size_t>(changes_[next].category)] += changes_[next].bytes;
            ++next;
        }
        for (size_t c = 0; c < memory_category_count; ++c) {
            out[i][c] = static_cast<uint64_t>(std::max<int64_t>(running[c], 0));
        }
    }
    return out;
}

uint64_t category_breakdown::total_bytes() const {
    uint64_t sum = 0;
    for (const auto& t : totals) {
        sum += t.bytes;
    }
    return sum;
}

//-------------------------------------------------------------------------------------------------
// [SECTION] totals at a moment
//-------------------------------------------------------------------------------------------------

category_breakdown categories_at(const device_model& model, const category_map& map,
                                 size_t position) {
    category_breakdown out;
    out.position = std::min(position, model.event_count());
    const auto& lifetimes = model.lifetimes();
    const auto& assignments = map.assignments();
    std::array<double, memory_category_count> weighted{};
    for (const uint32_t l : map.live_allocations(out.position)) {
        const size_t c = static_cast<size_t>(assignments[l].category);
        category_total& t = out.totals[c];
        t.bytes += lifetimes[l].size;
        t.requested += lifetimes[l].requested_size;
        ++t.blocks;
        rule_total& r = out.rules[static_cast<size_t>(assignments[l].rule)];
        r.bytes += lifetimes[l].size;
        ++r.blocks;
        weighted[c] += static_cast<double>(lifetimes[l].size) * assignments[l].confidence();
    }
    for (size_t c = 0; c < memory_category_count; ++c) {
        const category_total& t = out.totals[c];
        out.totals[c].confidence = t.bytes == 0 ? 0.0 : weighted[c] / static_cast<double>(t.bytes);
    }
    return out;
}

std::string categories_line(const category_breakdown& breakdown) {
    std::vector<size_t> order;
    for (size_t c = 0; c < memory_category_count; ++c) {
        if (breakdown.totals[c].bytes != 0) {
            order.push_back(c);
        }
    }
    if (order.empty()) {
        return "nothing allocated";
    }
    std::stable_sort(order.begin(), order.end(), [&](size_t x, size_t y) {
        return breakdown.totals[x].bytes > breakdown.totals[y].bytes;
    });
    std::string line;
    for (const size_t c : order) {
        line += (line.empty() ? "" : ", ") +
                std::string(category_name(static_cast<memory_category>(c))) + " " +
                format_bytes(breakdown.totals[c].bytes);
    }
    return line;
}

//-------------------------------------------------------------------------------------------------
// [SECTION] contradictions
//-------------------------------------------------------------------------------------------------

std::vector<category_contradiction> find_contradictions(const category_breakdown& breakdown,
                                                        job_kind kind) {
    const auto bytes = [&](memory_category c) {
        return breakdown.totals[static_cast<size_t>(c)].bytes;
    };
    const uint64_t parameters = bytes(memory_category::parameter);
    const uint64_t optimizer_state = bytes(memory_category::optimizer_state);
    const uint64_t gradients = bytes(memory_category::gradient);
    std::vector<category_contradiction> out;
    if (parameters == 0 && (optimizer_state != 0 || gradients != 0)) {
        out.push_back({"optimizer state " + format_bytes(optimizer_state) + " and gradients " +
                       format_bytes(gradients) +
                       " but no parameters: the parameters were made before recording began, "
                       "or under frames no rule knows (they may be counted as input or unknown)"});
    }
    // Adam keeps two tensors per parameter, SGD with momentum one; none keeps three.
    if (parameters != 0 && optimizer_state > 3 * parameters) {
        out.push_back({"optimizer state " + format_bytes(optimizer_state) + " is " +
                       std::to_string(optimizer_state / parameters) + " times the parameters (" +
                       format_bytes(parameters) +
                       "); no optimizer keeps more than 2: some parameters are counted elsewhere"});
    }
    if (kind == job_kind::inference && (optimizer_state != 0 || gradients != 0)) {
        out.push_back(
            {"gradients or optimizer state in a trace with no backward and no "
             "optimizer: a rule misread it"});
    }
    return out;
}

}  // namespace memtrail::analysis

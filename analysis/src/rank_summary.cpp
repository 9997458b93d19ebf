// summarize_rank: one model over every frame gives the peaks, the categories, the OOM reports and
// the live blocks at the peak; the hashes, the annotations and the curve are one pass over the
// trace. Stacks are folded from the tables alone (fold_stack_table), not by copying the trace.

#include "memtrail/analysis/rank_summary.hpp"

#include <algorithm>
#include <map>
#include <stdexcept>

#include "memtrail/analysis/frame_filter.hpp"
#include "memtrail/analysis/frame_text.hpp"
#include "memtrail/analysis/oom_report.hpp"
#include "memtrail/analysis/rank_jobs.hpp"
#include "memtrail/analysis/rank_overview.hpp"
#include "memtrail/analysis/stack_comparison.hpp"

namespace memtrail::analysis {

namespace {

constexpr size_t sketch_size = 64;

uint64_t mix(uint64_t hash, uint64_t value) {
    for (int i = 0; i < 8; ++i) {
        hash = (hash ^ ((value >> (8 * i)) & 0xff)) * 0x100000001b3ull;
    }
    return hash;
}

uint64_t settings_hash(const snapshot::allocator_settings& s) {
    uint64_t h = fnv1a(s.conf);
    h = mix(h, static_cast<uint64_t>(s.max_split_size));
    h = mix(h, s.max_non_split_rounding_size);
    h = mix(h, static_cast<uint64_t>(s.garbage_collection_threshold * 1e6));
    h = mix(h, s.expandable_segments ? 1 : 0);
    for (const uint64_t d : s.roundup_power2_divisions) {
        h = mix(h, d);
    }
    for (const auto& [name, value] : s.other) {
        h = fnv1a(value, fnv1a(name, h));
    }
    return h;
}

summary_identity identity_of(const snapshot::snapshot& s, int device, const std::string& path) {
    summary_identity id;
    const snapshot::job_identity& job = s.info.job;
    if (job.known()) {
        id.job_id = job.job_id;
        id.rank = job.rank;
        id.local_rank = job.local_rank;
        id.world_size = job.world_size;
        id.source = identity_source::snapshot;
    } else if (const auto rank = rank_in_path(path)) {
        id.rank = *rank;
        id.source = identity_source::file_name;
    }
    id.host = s.info.host;
    id.pid = s.info.pid;
    id.producer = s.info.producer;
    id.device = device;
    for (const auto& d : s.info.devices) {
        id.device_kinds.emplace_back(d.name, d.total_memory);
        if (d.device == device) {
            id.device_name = d.name;
            id.device_memory = d.total_memory;
        }
    }
    std::sort(id.device_kinds.begin(), id.device_kinds.end());
    id.allocator_conf = s.settings.conf;
    id.settings_hash = settings_hash(s.settings);
    id.first_time_ns = s.info.time_ns;
    id.last_time_ns = s.info.time_ns;
    for (const auto& trace : s.traces) {
        for (const auto& e : trace.entries) {
            if (e.time_ns != 0) {
                id.first_time_ns =
                    id.first_time_ns == 0 ? e.time_ns : std::min(id.first_time_ns, e.time_ns);
                break;
            }
        }
        for (auto e = trace.entries.rbegin(); e != trace.entries.rend(); ++e) {
            if (e->time_ns != 0) {
                id.last_time_ns = std::max(id.last_time_ns, e->time_ns);
                break;
            }
        }
    }
    return id;
}

// The innermost annotation open after `position` entries: the trace's own annotation entries
// when it has any, else PyTorch's external annotations up to the time of that moment.
std::string open_annotation(const device_model& model, size_t position) {
    const auto& s = model.source();
    std::vector<snapshot::string_id> open;
    bool any_in_trace = false;
    for (size_t i = 0; i < model.event_count(); ++i) {
        const auto& e = model.entry(i);
        if (e.kind != snapshot::action::annotation_start &&
            e.kind != snapshot::action::annotation_end) {
            continue;
        }
        any_in_trace = true;
        if (i >= position) {
            break;
        }
        if (e.kind == snapshot::action::annotation_start) {
            open.push_back(e.name);
        } else if (const auto it = std::find(open.rbegin(), open.rend(), e.name);
                   it != open.rend()) {
            open.erase(std::next(it).base());
        }
    }
    if (!any_in_trace) {
        const int64_t time = model.time_at(position);
        for (const auto& a : s.annotations) {
            if (a.device != model.device() || a.time_ns > time || position == 0) {
                continue;
            }
            if (a.is_start) {
                open.push_back(a.name);
            } else if (const auto it = std::find(open.rbegin(), open.rend(), a.name);
                       it != open.rend()) {
                open.erase(std::next(it).base());
            }
        }
    }
    return open.empty() ? std::string() : std::string(s.string_at(open.back()));
}

summary_peak peak_summary(const device_model& model, const category_map& map, series s) {
    const curve_peak p = peak_of(model, s);
    return {p.bytes, p.position, p.time_ns, map.steps().step_of(p.position),
            open_annotation(model, p.position)};
}

// The live blocks at peak allocated, by folded stack, most bytes first.
void add_top_stacks(rank_summary& out, const device_model& model, const category_map& map,
                    const folded_stack_table& folded) {
    struct per_stack {
        summary_stack stack;
        category_bytes by_category{};
    };
    std::map<snapshot::stack_id, per_stack> by_stack;
    const auto& lifetimes = model.lifetimes();
    for (const uint32_t l : map.live_allocations(out.peak_allocated.position)) {
        const allocation_lifetime& block = lifetimes[l];
        const snapshot::stack_id stack = folded.stack_of[block.stack];
        if (folded.tables->stack_at(stack).empty()) {
            out.unstacked_at_peak += block.size;
            continue;
        }
        per_stack& s = by_stack[stack];
        s.stack.bytes += block.size;
        ++s.stack.blocks;
        s.by_category[static_cast<size_t>(map.assignments()[l].category)] += block.size;
    }
    std::vector<std::pair<snapshot::stack_id, per_stack*>> order;
    for (auto& [id, s] : by_stack) {
        order.emplace_back(id, &s);
    }
    std::stable_sort(order.begin(), order.end(), [](const auto& a, const auto& b) {
        return a.second->stack.bytes > b.second->stack.bytes;
    });
    order.resize(std::min(order.size(), summary_top_stacks));
    for (auto& [id, s] : order) {
        summary_stack stack = std::move(s->stack);
        stack.hash = fnv1a(stack_text(*folded.tables, id));
        const auto most = std::max_element(s->by_category.begin(), s->by_category.end());
        stack.category = static_cast<memory_category>(std::distance(s->by_category.begin(), most));
        for (const snapshot::frame_id f : folded.tables->stack_at(id)) {
            stack.frames.push_back(frame_label(*folded.tables, f));
        }
        out.top_stacks.push_back(std::move(stack));
    }
}

void add_ooms(rank_summary& out, const device_model& model, const category_map& map) {
    for (const size_t entry : oom_entries(model)) {
        const oom_report r = analyze_oom(model, entry);
        summary_oom oom;
        oom.entry = entry;
        oom.time_ns = r.time_ns;
        oom.requested = r.requested;
        oom.verdict = std::string(verdict_key(r.verdict));
        if (r.secondary) {
            oom.verdict += " (secondary: " + std::string(verdict_key(*r.secondary)) + ")";
        }
        oom.explanation = r.explanation;
        if (r.outside_known) {
            oom.outside_allocator = r.outside;
            out.outside_allocator = std::max(out.outside_allocator.value_or(0), r.outside);
        }
        const category_breakdown at = categories_at(model, map, entry + 1);
        for (size_t c = 0; c < memory_category_count; ++c) {
            oom.categories[c] = at.totals[c].bytes;
        }
        out.ooms.push_back(std::move(oom));
    }
}

// Where each sequence chunk starts: the steps, merged to fit, or equal runs of entries.
std::vector<std::pair<size_t, size_t>> chunk_starts(const training_steps& steps, size_t entries) {
    std::vector<std::pair<size_t, size_t>> starts;  // first entry, first step
    if (!steps.boundaries.empty()) {
        const size_t count = steps.boundaries.size() + 1;
        const size_t per_chunk = (count + summary_sequence_chunks - 1) / summary_sequence_chunks;
        for (size_t step = 0; step < count; step += per_chunk) {
            starts.emplace_back(step == 0 ? 0 : steps.boundaries[step - 1], step);
        }
        return starts;
    }
    const size_t per_chunk =
        std::max<size_t>(1024, (entries + summary_sequence_chunks - 1) / summary_sequence_chunks);
    for (size_t first = 0; first == 0 || first < entries; first += per_chunk) {
        starts.emplace_back(first, 0);
    }
    return starts;
}

// One pass: the hash of each chunk's actions and sizes (addresses, times and stacks left out,
// so ranks that did the same hash equal) and of the whole trace.
void add_sequence(rank_summary& out, const device_model& model, const training_steps& steps) {
    const auto starts = chunk_starts(steps, model.event_count());
    uint64_t whole = fnv1a("");
    for (size_t c = 0; c < starts.size(); ++c) {
        const size_t end = c + 1 < starts.size() ? starts[c + 1].first : model.event_count();
        uint64_t hash = fnv1a("");
        for (size_t i = starts[c].first; i < end; ++i) {
            const auto& e = model.entry(i);
            if (e.kind == snapshot::action::snapshot) {
                continue;
            }
            hash = mix(mix(hash, static_cast<uint64_t>(e.kind)), e.size);
        }
        out.sequence.push_back({starts[c].first, starts[c].second, hash});
        whole = mix(whole, hash);
    }
    out.sequence_hash = whole;
}

void add_curve(rank_summary& out, const device_model& model) {
    const size_t positions = model.event_count() + 1;
    const size_t buckets = std::min(positions, summary_curve_points);
    for (size_t b = 0; b < buckets; ++b) {
        const size_t first = b * positions / buckets;
        const size_t last = (b + 1) * positions / buckets;
        out.curve.push_back({first, model.min_max(series::allocated, first, last).second,
                             model.min_max(series::reserved, first, last).second});
    }
}

}  // namespace

std::string_view identity_source_name(identity_source s) {
    switch (s) {
        case identity_source::snapshot:
            return "snapshot";
        case identity_source::file_name:
            return "file name";
        case identity_source::none:
            break;
    }
    return "none";
}

bool parse_identity_source(std::string_view name, identity_source& out) {
    for (const auto s :
         {identity_source::snapshot, identity_source::file_name, identity_source::none}) {
        if (identity_source_name(s) == name) {
            out = s;
            return true;
        }
    }
    return false;
}

uint64_t fnv1a(std::string_view text, uint64_t seed) {
    uint64_t hash = seed;
    for (const char c : text) {
        hash = (hash ^ static_cast<unsigned char>(c)) * 0x100000001b3ull;
    }
    return hash;
}

void add_to(rank_totals& totals, const rank_summary& rank) {
    totals +=
        rank_totals(rank.peak_allocated.bytes, rank.peak_reserved.bytes, rank.end_allocated,
                    rank.end_reserved, rank.allocations, rank.device_allocations, rank.oom_count);
}

rank_summary summarize_rank(std::shared_ptr<const snapshot::snapshot> source, int device,
                            const std::string& path, std::string file_kind, bool all_frames) {
    const device_model model = device_model::build(source, device);
    return summarize_rank(std::move(source), model, category_map::build(model), path,
                          std::move(file_kind), all_frames);
}

rank_summary summarize_rank(std::shared_ptr<const snapshot::snapshot> source,
                            const device_model& model, const category_map& map,
                            const std::string& path, std::string file_kind, bool all_frames) {
    if (&model.source() != source.get()) {
        throw std::invalid_argument(
            "summarize_rank: the model is not built over the snapshot given");
    }
    rank_summary out;
    out.path = path;
    out.file_kind = std::move(file_kind);
    out.identity = identity_of(*source, model.device(), path);
    out.all_frames = all_frames;
    const folded_stack_table folded = fold_stack_table(
        source, all_frames ? frame_visibility::all_frames : frame_visibility::user_frames);
    const rank_overview overview = overview_of(model);
    out.entries = model.event_count();
    if (const auto* trace = source->find_trace(model.device())) {
        out.dropped = trace->dropped;
    }
    out.peak_allocated = peak_summary(model, map, series::allocated);
    out.peak_reserved = peak_summary(model, map, series::reserved);
    out.end_allocated = overview.end_allocated;
    out.end_reserved = overview.end_reserved;
    out.allocations = overview.allocations;
    out.device_allocations = overview.device_allocations;
    out.oom_count = overview.ooms;
    out.job_kind = std::string(job_kind_name(map.kind()));
    out.step_source = std::string(step_source_name(map.steps().source));
    out.steps = map.steps().boundaries.size() + 1;
    const category_breakdown at_peak = categories_at(model, map, out.peak_allocated.position);
    for (size_t c = 0; c < memory_category_count; ++c) {
        out.categories_at_peak[c] = at_peak.totals[c].bytes;
    }
    const memory_totals reserved_peak = totals_of(model.state_after(out.peak_reserved.position));
    out.free_at_peak_reserved = reserved_peak.free;
    out.largest_free_at_peak_reserved = reserved_peak.largest_free;
    out.fragmentation_at_peak_reserved = reserved_peak.fragmentation();
    add_ooms(out, model, map);
    add_top_stacks(out, model, map, folded);
    out.stack_sketch = stack_fingerprints(*folded.tables);
    out.stack_sketch.resize(std::min(out.stack_sketch.size(), sketch_size));
    add_sequence(out, model, map.steps());
    add_curve(out, model);
    return out;
}

}  // namespace memtrail::analysis

// Runs of PyTorch's per-thread tags (user metadata, compile context), one pass over the trace.

#include "memtrail/analysis/entry_tags.hpp"

#include <algorithm>
#include <map>
#include <tuple>
#include <utility>

namespace memtrail::analysis {

namespace {

// The value an entry carries for `kind`, or no_id.
snapshot::string_id tag_value(const snapshot::snapshot& source, const snapshot::trace_entry& e,
                              tag_kind kind) {
    const snapshot::string_id id =
        kind == tag_kind::user_metadata ? e.user_metadata : e.compile_context;
    if (id == snapshot::no_id) {
        return snapshot::no_id;
    }
    const std::string_view text = source.string_at(id);
    return text.empty() || text == "N/A" ? snapshot::no_id : id;
}

bool has_python_frames(const snapshot::snapshot& source, snapshot::stack_id stack) {
    if (stack == snapshot::no_id || stack >= source.stacks().size()) {
        return false;
    }
    const auto& frames = source.stack_at(stack);
    return std::any_of(frames.begin(), frames.end(), [&](snapshot::frame_id f) {
        return source.frame_at(f).kind == snapshot::frame_kind::python;
    });
}

}  // namespace

std::string_view tag_kind_name(tag_kind kind) {
    return kind == tag_kind::user_metadata ? "metadata" : "compiled";
}

std::vector<tag_range> tag_ranges(const device_model& model) {
    const snapshot::snapshot& source = model.source();
    // PyTorch's pickles name no threads: there an entry without the tag ends a run only if it
    // ran Python (autograd's worker, whose entries carry no metadata, runs none).
    bool threads_known = false;
    for (size_t i = 0; i < model.event_count() && !threads_known; ++i) {
        threads_known = model.entry(i).thread != 0;
    }
    std::vector<tag_range> out;
    // The open run of each (kind, thread), as an index into `out`.
    std::map<std::pair<tag_kind, uint32_t>, size_t> open;
    for (size_t i = 0; i < model.event_count(); ++i) {
        const snapshot::trace_entry& e = model.entry(i);
        for (const tag_kind kind : {tag_kind::user_metadata, tag_kind::compile_context}) {
            const snapshot::string_id value = tag_value(source, e, kind);
            const auto key = std::make_pair(kind, e.thread);
            const auto it = open.find(key);
            if (it != open.end() && out[it->second].value == value) {
                tag_range& run = out[it->second];
                run.last = i;
                ++run.entries;
                if (e.kind == snapshot::action::alloc) {
                    run.allocated += e.size;
                }
                continue;
            }
            if (it != open.end()) {
                if (value == snapshot::no_id && !threads_known &&
                    !has_python_frames(source, e.stack)) {
                    continue;
                }
                open.erase(it);
            }
            if (value != snapshot::no_id) {
                open[key] = out.size();
                out.push_back({kind, value, e.thread, i, i, 1,
                               e.kind == snapshot::action::alloc ? e.size : 0});
            }
        }
    }
    return out;
}

std::vector<tag_summary> summarize_tags(const device_model& model,
                                        const std::vector<tag_range>& ranges) {
    std::map<std::pair<tag_kind, snapshot::string_id>, size_t> index;
    std::vector<tag_summary> out;
    for (const tag_range& r : ranges) {
        const auto [it, added] = index.try_emplace({r.kind, r.value}, out.size());
        if (added) {
            out.push_back(
                {r.kind, std::string(model.source().string_at(r.value)), 0, 0, 0, r.first, r.last});
        }
        tag_summary& s = out[it->second];
        ++s.runs;
        s.entries += r.entries;
        s.allocated += r.allocated;
        s.first = std::min(s.first, r.first);
        s.last = std::max(s.last, r.last);
    }
    std::stable_sort(out.begin(), out.end(), [](const tag_summary& a, const tag_summary& b) {
        return std::tie(a.first, a.kind) < std::tie(b.first, b.kind);
    });
    return out;
}

}  // namespace memtrail::analysis

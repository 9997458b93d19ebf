// Steps and phases: from annotations (Optimizer.step ranges, or a user range repeated each
// step), from the optimizer's frames, or from the trace's own periodicity; a generation's
// phases from generate()'s frames.

#include "detail/category_steps.hpp"

#include <algorithm>
#include <cctype>
#include <string_view>
#include <unordered_map>

#include "memtrail/analysis/entry_tags.hpp"

namespace memtrail::analysis {

using snapshot::action;

namespace {

bool contains(std::string_view text, std::string_view part) {
    return text.find(part) != std::string_view::npos;
}

// Drops a trailing "#<digits>" or " <digits>" so that "ProfilerStep#3" and "ProfilerStep#4", or
// "step 3" and "step 4", are one range.
std::string_view range_family(std::string_view name) {
    const size_t hash = name.find_last_of("# ");
    if (hash == std::string_view::npos || hash + 1 == name.size()) {
        return name;
    }
    for (size_t i = hash + 1; i < name.size(); ++i) {
        if (name[i] < '0' || name[i] > '9') {
            return name;
        }
    }
    return name.substr(0, hash);
}

std::vector<size_t> clean_boundaries(std::vector<size_t> boundaries, size_t count) {
    std::sort(boundaries.begin(), boundaries.end());
    boundaries.erase(std::unique(boundaries.begin(), boundaries.end()), boundaries.end());
    std::erase_if(boundaries, [&](size_t b) { return b == 0 || b >= count; });
    return boundaries;
}

std::string lowercase(std::string_view text) {
    std::string out(text);
    for (char& c : out) {
        c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    }
    return out;
}

// Entries inside ranges a user named after the phase they run ("forward", "backward") carry
// that phase, as frames of it would.
void mark_annotated_phases(const annotated_ranges& ranges, std::vector<uint32_t>& entry_flags) {
    for (const auto& [name, list] : ranges.by_family) {
        const std::string lower = lowercase(name);
        uint32_t flags = 0;
        if (contains(lower, "backward")) {
            flags = backward | annotated_backward;
        } else if (contains(lower, "forward")) {
            flags = forward;
        }
        for (const auto& [first, last] : list) {
            for (size_t i = first; flags != 0 && i < std::min(last, entry_flags.size()); ++i) {
                entry_flags[i] |= flags;
            }
        }
    }
}

// Steps from record_function ranges: the end of each Optimizer.step, else the start of each
// range of the family that repeats and covers the most of the trace.
std::vector<size_t> steps_from_annotations(const annotated_ranges& ranges) {
    if (!ranges.optimizer_ends.empty()) {
        return ranges.optimizer_ends;
    }
    const std::vector<std::pair<size_t, size_t>>* best = nullptr;
    size_t best_cover = 0;
    for (const auto& [name, list] : ranges.by_family) {
        size_t cover = 0;
        for (const auto& [first, last] : list) {
            cover += last - first;
        }
        if (list.size() >= 2 && cover > best_cover) {
            best = &list;
            best_cover = cover;
        }
    }
    std::vector<size_t> starts;
    if (best != nullptr) {
        for (const auto& [first, last] : *best) {
            starts.push_back(first);
        }
    }
    return starts;
}

// Steps from the optimizer's frames: a step ends after each run of entries under them, where
// the next allocation outside the optimizer follows.
std::vector<size_t> steps_from_optimizer(const device_model& model,
                                         const std::vector<uint32_t>& entry_flags) {
    std::vector<size_t> ends;
    size_t last_optimizer = no_position;
    for (size_t i = 0; i < model.event_count(); ++i) {
        if ((entry_flags[i] & (optimizer | zero_grad)) != 0) {
            last_optimizer = i;
        } else if (last_optimizer != no_position && model.entry(i).kind == action::alloc) {
            ends.push_back(last_optimizer + 1);
            last_optimizer = no_position;
        }
    }
    if (last_optimizer != no_position) {
        ends.push_back(last_optimizer + 1);
    }
    return ends;
}

// Steps from periodicity: the smallest K >= 2 such that at least three allocation stacks recur
// exactly K times, their i-th occurrences all coming before any of their (i+1)-th. Each such
// group of i-th occurrences is one step (a finer period, a model's layers, recurs more often).
std::vector<size_t> steps_from_periodicity(const device_model& model) {
    std::unordered_map<snapshot::stack_id, std::vector<size_t>> occurrences;
    for (size_t i = 0; i < model.event_count(); ++i) {
        const auto& e = model.entry(i);
        if (e.kind == action::alloc && e.stack != snapshot::no_id) {
            occurrences[e.stack].push_back(i);
        }
    }
    std::map<size_t, std::vector<const std::vector<size_t>*>> by_count;
    for (const auto& [stack, list] : occurrences) {
        if (list.size() >= 2) {
            by_count[list.size()].push_back(&list);
        }
    }
    for (const auto& [k, group] : by_count) {
        if (group.size() < 3) {
            continue;
        }
        std::vector<size_t> starts(k, no_position);
        std::vector<size_t> finishes(k, 0);
        for (const auto* list : group) {
            for (size_t i = 0; i < k; ++i) {
                starts[i] = std::min(starts[i], (*list)[i]);
                finishes[i] = std::max(finishes[i], (*list)[i]);
            }
        }
        bool interleaved = true;
        for (size_t i = 0; i + 1 < k && interleaved; ++i) {
            interleaved = finishes[i] < starts[i + 1];
        }
        if (interleaved) {
            return std::vector<size_t>(starts.begin() + 1, starts.end());
        }
    }
    return {};
}

}  // namespace

annotated_ranges ranges_of(const device_model& model) {
    struct range_mark {
        std::string name;
        bool is_start = false;
        size_t position = 0;
    };
    std::vector<range_mark> marks;
    const auto& source = model.source();
    // memtrail keeps its ranges both as trace entries and in the list; PyTorch only in the list.
    for (size_t i = 0; i < model.event_count(); ++i) {
        const auto& e = model.entry(i);
        if (e.kind == action::annotation_start || e.kind == action::annotation_end) {
            marks.push_back({std::string(range_family(source.string_at(e.name))),
                             e.kind == action::annotation_start, i});
        }
    }
    const bool in_trace = !marks.empty();
    for (const auto& a : source.annotations) {
        if (a.device == model.device() && !in_trace) {
            marks.push_back({std::string(range_family(source.string_at(a.name))), a.is_start,
                             model.position_at_time(a.time_ns)});
        }
    }
    // The user's metadata (_set_memory_metadata) marks ranges as record_function does.
    for (const tag_range& t : tag_ranges(model)) {
        if (t.kind == tag_kind::user_metadata) {
            const std::string family(range_family(source.string_at(t.value)));
            marks.push_back({family, true, t.first});
            marks.push_back({family, false, t.last + 1});
        }
    }
    std::stable_sort(marks.begin(), marks.end(), [](const range_mark& a, const range_mark& b) {
        return a.position < b.position;
    });
    annotated_ranges out;
    std::map<std::string, size_t> open;
    for (const auto& m : marks) {
        if (m.name.starts_with("Optimizer.step") && !m.is_start) {
            out.optimizer_ends.push_back(m.position);
        }
        if (m.is_start) {
            open[m.name] = m.position;
        } else if (const auto it = open.find(m.name); it != open.end()) {
            out.by_family[m.name].emplace_back(it->second, m.position);
            open.erase(it);
        }
    }
    return out;
}

trace_evidence gather_evidence(const device_model& model, stack_flags& flags_of,
                               const annotated_ranges& ranges) {
    trace_evidence out;
    const size_t count = model.event_count();
    out.entry_flags.resize(count);
    for (size_t i = 0; i < count; ++i) {
        out.entry_flags[i] = flags_of.of(model.entry(i).stack);
        out.trace_flags |= out.entry_flags[i];
    }
    out.python_trace = (out.trace_flags & has_python) != 0 && (out.trace_flags & has_native) == 0;
    mark_annotated_phases(ranges, out.entry_flags);
    for (size_t i = 0; i < count; ++i) {
        out.thread_flags[model.entry(i).thread] |= out.entry_flags[i];
    }
    return out;
}

job_kind find_job_kind(const trace_evidence& evidence, const annotated_ranges& ranges) {
    constexpr uint32_t training_evidence =
        backward | optimizer | zero_grad | accumulate_grad | annotated_backward;
    if ((evidence.trace_flags & training_evidence) != 0 || !ranges.optimizer_ends.empty()) {
        return job_kind::training;
    }
    if ((evidence.trace_flags & (torch_frames | generate_call)) != 0) {
        return job_kind::inference;
    }
    return job_kind::unknown;
}

training_steps find_steps(const device_model& model, const trace_evidence& evidence,
                          const annotated_ranges& ranges, job_kind kind) {
    if (kind == job_kind::inference) {
        return {};
    }
    const size_t count = model.event_count();
    if (auto b = clean_boundaries(steps_from_annotations(ranges), count); !b.empty()) {
        return {step_source::annotations, std::move(b)};
    }
    if (auto b = clean_boundaries(steps_from_optimizer(model, evidence.entry_flags), count);
        !b.empty()) {
        return {step_source::optimizer_frames, std::move(b)};
    }
    if (auto b = clean_boundaries(steps_from_periodicity(model), count); !b.empty()) {
        return {step_source::periodicity, std::move(b)};
    }
    return {};
}

generation_phases find_generation(const device_model& model, const trace_evidence& evidence) {
    generation_phases out;
    if ((evidence.trace_flags & generate_call) == 0) {
        return out;
    }
    bool in_prefill = false;
    bool in_decode_preparation = false;
    for (size_t i = 0; i < model.event_count(); ++i) {
        const uint32_t f = evidence.entry_flags[i];
        const bool framed = (f & has_frames) != 0;
        if ((f & prefill) != 0) {
            if (!in_prefill && out.prefill_end == 0) {
                out.prefill_begin = i;
            }
            in_prefill = true;
            out.prefill_end = i + 1;
        } else if (framed) {
            in_prefill = false;
        }
        // Each decode step begins where generate() prepares the next token's inputs.
        const bool preparing = (f & decode_step) != 0 && (f & prefill) == 0;
        if (preparing && !in_decode_preparation) {
            out.decode_starts.push_back(i);
        }
        if (framed) {
            in_decode_preparation = preparing;
        }
    }
    return out;
}

phases_found find_phases(const device_model& model, const trace_evidence& evidence,
                         const training_steps& steps, job_kind kind) {
    phases_found out;
    out.steps.resize(steps.boundaries.size() + 1);
    out.backward.resize(model.event_count());
    for (size_t i = 0; i < model.event_count(); ++i) {
        const auto& e = model.entry(i);
        step_phases& p = out.steps[steps.step_of(i)];
        const uint32_t f = evidence.entry_flags[i];
        // zero_grad may run before the next forward, outside the optimizer's step.
        const bool in_step = (f & optimizer) != 0 && (f & zero_grad) == 0;
        if (in_step && p.optimizer == no_position) {
            p.optimizer = i;
        }
        if (e.kind != action::alloc) {
            continue;
        }
        if ((f & backward) != 0 || ((f & has_frames) == 0 && evidence.on_worker(e.thread))) {
            out.backward[i] = backward_evidence::direct;
        } else if (kind != job_kind::inference && evidence.python_trace && (f & has_frames) == 0 &&
                   p.forward != no_position && p.optimizer == no_position) {
            out.backward[i] = backward_evidence::unstacked;
        }
        if ((f & forward) != 0 && p.forward == no_position) {
            p.forward = i;
        }
        if (out.backward[i] != backward_evidence::absent && p.backward == no_position) {
            p.backward = i;
        }
    }
    return out;
}

}  // namespace memtrail::analysis

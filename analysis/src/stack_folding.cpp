// with_frame_visibility: every stack folded to the frames of interest, stacks that fold alike
// interned as one. Two passes: the first folds each stack to a key (its shown frames and, for each
// folded run, what it holds) and collects the run lengths of every key; the second writes one
// line per run with the lengths its stacks have, and the key's stack.

#include <algorithm>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "memtrail/analysis/frame_filter.hpp"
#include "memtrail/snapshot/recorder_frames.hpp"

namespace memtrail::analysis {

namespace {

// A folded stack: frame ids >= 0, folded runs as -1 - (index of what the run holds).
using folded_key = std::vector<int64_t>;

struct frame_facts {
    std::vector<bool> machinery;  // the recording machinery: left out always
    std::vector<frame_role> role;
    std::vector<std::string> origin;
    std::vector<bool> python;
};

frame_facts facts_of(const snapshot::snapshot& source, frame_visibility visibility) {
    const size_t count = source.frames().size();
    frame_facts facts{std::vector<bool>(count), {}, {}, {}};
    for (size_t f = 0; f < count; ++f) {
        facts.machinery[f] =
            snapshot::is_recording_machinery(source, static_cast<snapshot::frame_id>(f));
    }
    if (visibility == frame_visibility::user_frames) {
        facts.role.resize(count);
        facts.origin.resize(count);
        facts.python.resize(count);
        for (size_t f = 0; f < count; ++f) {
            const auto id = static_cast<snapshot::frame_id>(f);
            facts.role[f] = role_of(source, id);
            facts.origin[f] = frame_origin(source, id);
            facts.python[f] = source.frame_at(id).kind == snapshot::frame_kind::python;
        }
    }
    return facts;
}

// "torch.nn plumbing", "transformers, torch.nn, torch.utils", "PyTorch C++, CPython and 3 more".
std::string run_contents(const std::vector<std::string>& origins, bool all_plumbing) {
    constexpr size_t named = 4;
    std::string text;
    for (size_t i = 0; i < std::min(origins.size(), named); ++i) {
        text += (i == 0 ? "" : ", ") + origins[i];
    }
    if (origins.size() > named) {
        text += " and " + std::to_string(origins.size() - named) + " more";
    }
    return all_plumbing ? text + " plumbing" : text;
}

class stack_folder {
  public:
    explicit stack_folder(const frame_facts& facts) : facts_(facts) {}

    // The stack folded (innermost first), and the length of each of its folded runs.
    folded_key fold(const std::vector<snapshot::frame_id>& stack, std::vector<uint32_t>& runs) {
        runs.clear();
        std::vector<snapshot::frame_id> frames;
        std::copy_if(stack.begin(), stack.end(), std::back_inserter(frames),
                     [&](snapshot::frame_id f) { return !facts_.machinery[f]; });
        const auto is_plumbing = [&](size_t i) {
            return facts_.role[frames[i]] == frame_role::plumbing;
        };
        size_t inner = 0;
        while (inner < frames.size() && is_plumbing(inner)) {
            ++inner;
        }
        size_t outer = frames.size();
        while (outer > inner && is_plumbing(outer - 1)) {
            --outer;
        }
        folded_key key;
        if (inner == frames.size()) {  // plumbing alone: kept whole
            key.assign(frames.begin(), frames.end());
            return key;
        }
        size_t user = inner;
        while (user < outer && facts_.role[frames[user]] != frame_role::user) {
            ++user;
        }
        // No code of the user's (a library's worker thread): from a C++ frame, the innermost
        // Python frame is the one that says what ran it.
        if (user == outer && !facts_.python[frames[inner]]) {
            user = inner;
            while (user < outer && !facts_.python[frames[user]]) {
                ++user;
            }
        }
        key.push_back(frames[inner]);
        size_t next = inner + 1;
        if (user < outer && user > inner) {
            add_run(frames, next, user, key, runs);
            key.push_back(frames[user]);
            next = user + 1;
        }
        while (next < outer) {
            size_t end = next;
            while (end < outer && is_plumbing(end)) {
                ++end;
            }
            add_run(frames, next, end, key, runs);
            if (end < outer) {
                key.push_back(frames[end]);
            }
            next = end + 1;
        }
        return key;
    }

    const std::vector<std::string>& run_texts() const { return run_texts_; }

  private:
    // Frames [first, end) as one folded run, when there are any.
    void add_run(const std::vector<snapshot::frame_id>& frames, size_t first, size_t end,
                 folded_key& key, std::vector<uint32_t>& runs) {
        if (first >= end) {
            return;
        }
        std::vector<std::string> origins;
        bool all_plumbing = true;
        for (size_t i = first; i < end; ++i) {
            const std::string& origin = facts_.origin[frames[i]];
            if (std::find(origins.begin(), origins.end(), origin) == origins.end()) {
                origins.push_back(origin);
            }
            all_plumbing = all_plumbing && facts_.role[frames[i]] == frame_role::plumbing;
        }
        const std::string text = run_contents(origins, all_plumbing);
        auto [it, inserted] = run_ids_.try_emplace(text, run_texts_.size());
        if (inserted) {
            run_texts_.push_back(text);
        }
        key.push_back(-1 - static_cast<int64_t>(it->second));
        runs.push_back(static_cast<uint32_t>(end - first));
    }

    const frame_facts& facts_;
    std::map<std::string, size_t> run_ids_;
    std::vector<std::string> run_texts_;
};

struct run_lengths {
    uint32_t least = UINT32_MAX;
    uint32_t most = 0;
};

constexpr std::string_view run_prefix = "... ";

std::string run_label(const run_lengths& lengths, const std::string& contents) {
    std::string count = std::to_string(lengths.least);
    if (lengths.most != lengths.least) {
        count += " to " + std::to_string(lengths.most);
    }
    return std::string(run_prefix) + count + (lengths.most == 1 ? " frame of " : " frames of ") +
           contents;
}

// The length at the front of `text` ("7", "3 to 7"), and where it ends; 0 when there is none.
size_t length_end(std::string_view text) {
    const auto digits = [&](size_t from) {
        size_t end = from;
        while (end < text.size() && text[end] >= '0' && text[end] <= '9') {
            ++end;
        }
        return end;
    };
    const size_t end = digits(0);
    if (end == 0) {
        return 0;
    }
    constexpr std::string_view to = " to ";
    if (text.substr(end, to.size()) == to) {
        const size_t most_end = digits(end + to.size());
        return most_end > end + to.size() ? most_end : 0;
    }
    return end;
}

snapshot::frame_id run_frame(snapshot::snapshot& out, const std::string& label) {
    snapshot::frame line;
    line.function = out.intern_string(label);
    return out.intern_frame(line);
}

// `source`'s stacks as `stacks` maps them, everything else copied.
std::shared_ptr<snapshot::snapshot> with_stacks(const snapshot::snapshot& source,
                                                std::shared_ptr<snapshot::snapshot> out,
                                                const std::vector<snapshot::stack_id>& stacks) {
    out->info = source.info;
    out->settings = source.settings;
    out->stats = source.stats;
    out->annotations = source.annotations;
    out->outside = source.outside;
    for (auto* events : {&out->outside.events, &out->outside.live}) {
        for (snapshot::outside_event& event : *events) {
            event.stack = stacks[event.stack];
        }
    }
    out->segments = source.segments;
    for (snapshot::segment& segment : out->segments) {
        segment.stack = stacks[segment.stack];
        for (snapshot::block& block : segment.blocks) {
            block.stack = stacks[block.stack];
        }
    }
    out->traces = source.traces;
    for (snapshot::device_trace& trace : out->traces) {
        for (snapshot::trace_entry& entry : trace.entries) {
            entry.stack = stacks[entry.stack];
        }
    }
    return out;
}

}  // namespace

std::string without_run_length(std::string_view label) {
    if (!label.starts_with(run_prefix)) {
        return std::string(label);
    }
    const std::string_view rest = label.substr(run_prefix.size());
    const size_t end = length_end(rest);
    for (const std::string_view unit : {" frames of ", " frame of "}) {
        if (end != 0 && rest.substr(end, unit.size()) == unit) {
            return std::string(run_prefix) + "frames of " +
                   std::string(rest.substr(end + unit.size()));
        }
    }
    return std::string(label);
}

snapshot::frame_id users_frame(const snapshot::snapshot& source, snapshot::stack_id stack) {
    for (const snapshot::frame_id f : source.stack_at(stack)) {
        const std::string_view function = source.string_at(source.frame_at(f).function);
        const bool folded_line = without_run_length(function) != function;
        if (!folded_line && role_of(source, f) == frame_role::user) {
            return f;
        }
    }
    return snapshot::no_id;
}

namespace {

// The folded stacks of `source`: their tables and where each of its stacks went; nullopt when
// folding changes nothing.
struct folded_tables {
    std::shared_ptr<snapshot::snapshot> tables;
    std::vector<snapshot::stack_id> stack_map;
};
std::optional<folded_tables> fold_tables(const snapshot::snapshot& source,
                                         frame_visibility visibility) {
    const frame_facts facts = facts_of(source, visibility);
    const bool folding = visibility == frame_visibility::user_frames;
    const bool any_machinery =
        std::find(facts.machinery.begin(), facts.machinery.end(), true) != facts.machinery.end();
    if (!folding && !any_machinery) {
        return std::nullopt;
    }

    // First pass: every stack's key, and the run lengths each key's stacks have.
    stack_folder folder(facts);
    std::map<folded_key, size_t> group_of_key;
    std::vector<const folded_key*> group_keys;
    std::vector<std::vector<run_lengths>> group_runs;
    std::vector<size_t> group_of_stack(source.stacks().size());
    std::vector<uint32_t> runs;
    for (size_t s = 0; s < group_of_stack.size(); ++s) {
        const auto& stack = source.stack_at(static_cast<snapshot::stack_id>(s));
        folded_key key;
        if (folding) {
            key = folder.fold(stack, runs);
        } else {
            runs.clear();
            for (const snapshot::frame_id f : stack) {
                if (!facts.machinery[f]) {
                    key.push_back(f);
                }
            }
        }
        auto [it, inserted] = group_of_key.try_emplace(std::move(key), group_keys.size());
        if (inserted) {
            group_keys.push_back(&it->first);
            group_runs.emplace_back(runs.size());
        }
        for (size_t r = 0; r < runs.size(); ++r) {
            run_lengths& lengths = group_runs[it->second][r];
            lengths.least = std::min(lengths.least, runs[r]);
            lengths.most = std::max(lengths.most, runs[r]);
        }
        group_of_stack[s] = it->second;
    }

    bool unchanged = group_keys.size() == group_of_stack.size();
    for (size_t s = 0; unchanged && s < group_of_stack.size(); ++s) {
        const auto& stack = source.stack_at(static_cast<snapshot::stack_id>(s));
        const folded_key& key = *group_keys[group_of_stack[s]];
        unchanged = std::equal(stack.begin(), stack.end(), key.begin(), key.end(),
                               [](snapshot::frame_id f, int64_t k) { return k == f; });
    }
    if (unchanged) {
        return std::nullopt;
    }

    // Second pass: interned in the same order, strings and frames keep their ids; then each
    // group's stack, its folded runs as added frames.
    auto out = std::make_shared<snapshot::snapshot>();
    for (const std::string& s : source.strings()) {
        out->intern_string(s);
    }
    for (const snapshot::frame& f : source.frames()) {
        out->intern_frame(f);
    }
    std::vector<snapshot::stack_id> group_stack(group_keys.size());
    std::vector<snapshot::frame_id> frames;
    for (size_t g = 0; g < group_keys.size(); ++g) {
        frames.clear();
        size_t run = 0;
        for (const int64_t item : *group_keys[g]) {
            if (item >= 0) {
                frames.push_back(static_cast<snapshot::frame_id>(item));
            } else {
                const std::string& contents = folder.run_texts()[static_cast<size_t>(-1 - item)];
                frames.push_back(run_frame(*out, run_label(group_runs[g][run++], contents)));
            }
        }
        group_stack[g] = out->intern_stack(frames);
    }
    std::vector<snapshot::stack_id> stack_map(group_of_stack.size());
    for (size_t s = 0; s < stack_map.size(); ++s) {
        stack_map[s] = group_stack[group_of_stack[s]];
    }
    return folded_tables{std::move(out), std::move(stack_map)};
}

}  // namespace

std::shared_ptr<const snapshot::snapshot> with_frame_visibility(
    std::shared_ptr<const snapshot::snapshot> source, frame_visibility visibility) {
    auto folded = fold_tables(*source, visibility);
    if (!folded) {
        return source;
    }
    return with_stacks(*source, std::move(folded->tables), folded->stack_map);
}

folded_stack_table fold_stack_table(std::shared_ptr<const snapshot::snapshot> source,
                                    frame_visibility visibility) {
    auto folded = fold_tables(*source, visibility);
    if (!folded) {
        std::vector<snapshot::stack_id> same(source->stacks().size());
        for (size_t s = 0; s < same.size(); ++s) {
            same[s] = static_cast<snapshot::stack_id>(s);
        }
        return {std::move(source), std::move(same)};
    }
    return {std::move(folded->tables), std::move(folded->stack_map)};
}

}  // namespace memtrail::analysis

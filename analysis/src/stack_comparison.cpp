#include "memtrail/analysis/stack_comparison.hpp"

#include <algorithm>
#include <cstdlib>
#include <map>

#include "memtrail/analysis/frame_filter.hpp"
#include "memtrail/analysis/frame_text.hpp"

namespace memtrail::analysis {

uint64_t total_bytes(const std::vector<stack_bytes>& stacks) {
    uint64_t total = 0;
    for (const stack_bytes& s : stacks) {
        total += s.bytes;
    }
    return total;
}

std::string stack_text(const snapshot::snapshot& source, snapshot::stack_id stack) {
    std::string text;
    for (const auto& label : stack_labels(source, stack)) {
        text += without_run_length(label) + "\n";
    }
    return text;
}

std::string why_unstacked(const snapshot::snapshot& source) {
    if (source.stacks().size() <= 1) {
        return "this snapshot recorded no stacks";
    }
    // The lines that stand for folded runs of frames are no recorded frames.
    const bool any_native = std::any_of(
        source.frames().begin() + 1, source.frames().end(), [&](const snapshot::frame& f) {
            const std::string_view function = source.string_at(f.function);
            return f.kind == snapshot::frame_kind::native &&
                   without_run_length(function) == function;
        });
    if (!any_native) {
        return "made on threads that run no Python, above all autograd's backward threads: the "
               "snapshot recorded Python frames only (PyTorch records C++ frames too with "
               "_record_memory_history(stacks=\"all\"))";
    }
    return "no frames were recorded for them";
}

int64_t matched_stack::change_from_first(size_t i) const {
    return static_cast<int64_t>(bytes[i]) - static_cast<int64_t>(bytes[0]);
}

int64_t matched_stack::largest_change() const {
    int64_t largest = 0;
    for (size_t i = 1; i < bytes.size(); ++i) {
        const int64_t change = change_from_first(i);
        if (std::abs(change) > std::abs(largest)) {
            largest = change;
        }
    }
    return largest;
}

uint64_t matched_stack::most_bytes() const {
    return *std::max_element(bytes.begin(), bytes.end());
}

std::vector<matched_stack> match_stacks(const std::vector<stacks_in_snapshot>& snapshots) {
    std::map<std::string, matched_stack> by_text;
    for (size_t i = 0; i < snapshots.size(); ++i) {
        for (const stack_bytes& entry : snapshots[i].stacks) {
            const auto [it, first_seen] =
                by_text.try_emplace(stack_text(*snapshots[i].source, entry.stack));
            matched_stack& match = it->second;
            if (first_seen) {
                match.bytes.resize(snapshots.size(), 0);
                match.first_holder = i;
                match.stack = entry.stack;
            }
            match.bytes[i] += entry.bytes;
        }
    }
    std::vector<matched_stack> matched;
    matched.reserve(by_text.size());
    for (auto& [text, match] : by_text) {
        matched.push_back(std::move(match));
    }
    return matched;
}

std::vector<matched_stack> largest_stacks(const std::vector<stacks_in_snapshot>& snapshots,
                                          size_t count) {
    std::vector<matched_stack> stacks = match_stacks(snapshots);
    std::sort(stacks.begin(), stacks.end(), [](const matched_stack& a, const matched_stack& b) {
        return a.most_bytes() > b.most_bytes();
    });
    stacks.resize(std::min(count, stacks.size()));
    return stacks;
}

std::vector<matched_stack> stacks_changed_most(const std::vector<stacks_in_snapshot>& snapshots,
                                               size_t count) {
    std::vector<matched_stack> changed;
    for (matched_stack& match : match_stacks(snapshots)) {
        if (match.largest_change() != 0) {
            changed.push_back(std::move(match));
        }
    }
    std::sort(changed.begin(), changed.end(), [](const matched_stack& a, const matched_stack& b) {
        return std::abs(a.largest_change()) > std::abs(b.largest_change());
    });
    changed.resize(std::min(count, changed.size()));
    return changed;
}

}  // namespace memtrail::analysis

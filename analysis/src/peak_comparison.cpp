#include "memtrail/analysis/peak_comparison.hpp"

#include <algorithm>
#include <cstdlib>
#include <map>
#include <numeric>

#include "memtrail/analysis/size_text.hpp"

namespace memtrail::analysis {

uint64_t peak_contents::unstacked_bytes() const {
    return std::accumulate(unstacked.begin(), unstacked.end(), uint64_t{0});
}

peak_contents contents_at_peak(const device_model& model, const device_model& categorized) {
    // The two models hold one trace: their lifetimes are the same, in the same order.
    const category_map map = category_map::build(categorized);
    peak_contents out;
    out.source = &model.source();
    out.position = model.peak_position(series::allocated);
    out.categories = categories_at(model, map, out.position);
    out.stacks.source = out.source;
    struct per_stack {
        stack_bytes total;
        std::array<uint64_t, memory_category_count> by_category{};
    };
    std::map<snapshot::stack_id, per_stack> by_stack;
    const auto& lifetimes = model.lifetimes();
    for (const uint32_t l : map.live_allocations(out.position)) {
        const allocation_lifetime& block = lifetimes[l];
        const auto category = static_cast<size_t>(map.assignments()[l].category);
        if (out.source->stack_at(block.stack).empty()) {
            out.unstacked[category] += block.size;
            continue;
        }
        per_stack& s = by_stack[block.stack];
        s.total.stack = block.stack;
        s.total.bytes += block.size;
        ++s.total.blocks;
        s.total.largest_block = std::max(s.total.largest_block, block.size);
        s.by_category[category] += block.size;
    }
    std::vector<const per_stack*> order;
    for (const auto& [id, s] : by_stack) {
        order.push_back(&s);
    }
    std::stable_sort(order.begin(), order.end(), [](const per_stack* a, const per_stack* b) {
        return a->total.bytes > b->total.bytes;
    });
    for (const per_stack* s : order) {
        out.stacks.stacks.push_back(s->total);
        const auto most = std::max_element(s->by_category.begin(), s->by_category.end());
        out.stack_categories.push_back(
            static_cast<memory_category>(std::distance(s->by_category.begin(), most)));
    }
    return out;
}

bool about_equal(uint64_t a, uint64_t b) {
    const uint64_t difference = a > b ? a - b : b - a;
    return difference <= std::max<uint64_t>(std::max(a, b) / 100, 1ull << 20);
}

int64_t category_comparison::change(size_t from, size_t to) const {
    return static_cast<int64_t>(bytes[to]) - static_cast<int64_t>(bytes[from]);
}

std::vector<category_comparison> compare_categories(
    const std::vector<category_breakdown>& breakdowns) {
    std::vector<category_comparison> out;
    for (size_t c = 0; c < memory_category_count; ++c) {
        category_comparison comparison{static_cast<memory_category>(c), {}};
        for (const category_breakdown& breakdown : breakdowns) {
            comparison.bytes.push_back(breakdown.totals[c].bytes);
        }
        out.push_back(std::move(comparison));
    }
    return out;
}

namespace {

// "a", "a and b", "a, b and c".
std::string listed(const std::vector<std::string>& names) {
    std::string text;
    for (size_t i = 0; i < names.size(); ++i) {
        text += (i == 0 ? "" : i + 1 == names.size() ? " and " : ", ") + names[i];
    }
    return text;
}

}  // namespace

std::string category_changes_text(const std::vector<category_comparison>& categories, size_t from,
                                  size_t to) {
    std::vector<const category_comparison*> changed;
    std::vector<std::string> equal;
    for (const category_comparison& c : categories) {
        if (c.bytes[from] == 0 && c.bytes[to] == 0) {
            continue;
        }
        if (about_equal(c.bytes[from], c.bytes[to])) {
            equal.emplace_back(category_name(c.category));
        } else {
            changed.push_back(&c);
        }
    }
    if (changed.empty() && equal.empty()) {
        return "nothing allocated";
    }
    if (changed.empty()) {
        return "every category equal (" + listed(equal) + ")";
    }
    std::stable_sort(changed.begin(), changed.end(), [&](const auto* a, const auto* b) {
        return std::abs(a->change(from, to)) > std::abs(b->change(from, to));
    });
    std::string text;
    for (const category_comparison* c : changed) {
        text += (text.empty() ? "" : ", ") + std::string(category_name(c->category)) + " " +
                format_bytes_delta(c->change(from, to));
    }
    if (!equal.empty()) {
        text += "; " + listed(equal) + " equal";
    }
    return text;
}

std::vector<stack_change> stacks_grown_most(const std::vector<peak_contents>& peaks, size_t from,
                                            size_t to, size_t count) {
    std::vector<stacks_in_snapshot> stacks;
    for (const peak_contents& peak : peaks) {
        stacks.push_back(peak.stacks);
    }
    // The category of a stack where it grew: looked up by text in the snapshot `to`.
    std::map<std::string, memory_category> category_in_to;
    for (size_t i = 0; i < peaks[to].stacks.stacks.size(); ++i) {
        category_in_to.emplace(stack_text(*peaks[to].source, peaks[to].stacks.stacks[i].stack),
                               peaks[to].stack_categories[i]);
    }
    std::vector<stack_change> grown;
    for (matched_stack& match : match_stacks(stacks)) {
        if (match.bytes[to] <= match.bytes[from]) {
            continue;
        }
        const std::string text = stack_text(*stacks[match.first_holder].source, match.stack);
        grown.push_back({std::move(match), category_in_to.at(text)});
    }
    std::stable_sort(grown.begin(), grown.end(), [&](const stack_change& a, const stack_change& b) {
        return a.stack.bytes[to] - a.stack.bytes[from] > b.stack.bytes[to] - b.stack.bytes[from];
    });
    grown.resize(std::min(count, grown.size()));
    return grown;
}

size_t median_rank(const std::vector<uint64_t>& reserved_peaks, size_t highest) {
    std::vector<size_t> order(reserved_peaks.size());
    std::iota(order.begin(), order.end(), size_t{0});
    std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
        if (reserved_peaks[a] != reserved_peaks[b]) {
            return reserved_peaks[a] < reserved_peaks[b];
        }
        return a != highest && b == highest;
    });
    return order[(order.size() - 1) / 2];
}

std::string median_rank_meaning(size_t rank_count) {
    if (rank_count == 2) {
        return "the median rank: with 2 ranks, the other one";
    }
    return "the median rank: the middle of the " + std::to_string(rank_count) +
           " ranks ordered by peak reserved" +
           (rank_count % 2 == 0 ? ", the lower of the two in the middle" : "");
}

rank_explanation explain_highest_rank(const std::vector<const device_model*>& models,
                                      const std::vector<const device_model*>& categorized,
                                      size_t stack_count) {
    rank_explanation out;
    std::vector<uint64_t> reserved;
    std::vector<category_breakdown> breakdowns;
    for (size_t i = 0; i < models.size(); ++i) {
        const device_model* model = models[i];
        reserved.push_back(model->values(series::reserved)[model->peak_position(series::reserved)]);
        out.peaks.push_back(contents_at_peak(*model, *categorized[i]));
        breakdowns.push_back(out.peaks.back().categories);
    }
    for (size_t i = 1; i < models.size(); ++i) {
        if (reserved[i] > reserved[out.highest]) {
            out.highest = i;
        }
    }
    out.median = median_rank(reserved, out.highest);
    out.categories = compare_categories(breakdowns);
    if (out.median != out.highest) {
        out.stacks = stacks_grown_most(out.peaks, out.median, out.highest, stack_count);
    }
    return out;
}

}  // namespace memtrail::analysis

#pragma once
// Why one snapshot peaks higher than another: what each holds at its own peak of allocated
// memory, by category (categories_at) and by allocation stack, set side by side. `memtrail
// ranks` explains the rank that peaks highest against the median rank with it, and `memtrail
// diff` compares each file with the base.

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "memtrail/analysis/categories.hpp"
#include "memtrail/analysis/stack_comparison.hpp"

namespace memtrail::analysis {

// What one snapshot (one device model) holds at its peak of allocated memory. Categories and
// stacks count the same blocks, those categories_at counts (allocated, not pending free).
struct peak_contents {
    const snapshot::snapshot* source = nullptr;
    size_t position = 0;  // model.peak_position(series::allocated)
    category_breakdown categories;
    // Bytes per recorded stack, most first, each with the category most of its bytes are in.
    stacks_in_snapshot stacks;
    std::vector<memory_category> stack_categories;  // parallel to stacks.stacks
    // Blocks whose stack has no frames, by category: set apart, as they are no one stack.
    std::array<uint64_t, memory_category_count> unstacked{};
    uint64_t unstacked_bytes() const;
};
// `categorized` is the same trace with every recorded frame (before stacks are folded for
// showing): the categories read frames that folding leaves out (nn.Module._apply, the optimizer,
// autograd, FSDP's and DDP's own code).
peak_contents contents_at_peak(const device_model& model, const device_model& categorized);
inline peak_contents contents_at_peak(const device_model& model) {
    return contents_at_peak(model, model);
}

// Two amounts count as equal when they differ by at most 1% of the larger or 1 MiB (ranks of
// one job differ by a few blocks of rounding, or by where their peaks fall in a step).
bool about_equal(uint64_t a, uint64_t b);

// One category across snapshots.
struct category_comparison {
    memory_category category = memory_category::unknown;
    std::vector<uint64_t> bytes;  // per snapshot
    int64_t change(size_t from, size_t to) const;
};
// Every category (in memory_category's order) across `breakdowns`.
std::vector<category_comparison> compare_categories(
    const std::vector<category_breakdown>& breakdowns);

// "activation +851MiB, autograd_detail +123MiB; optimizer_state, input and unknown equal": the
// categories that differ from `from` to `to`, largest change first, then those held in either
// and about_equal; "every category equal" when none differs; "nothing allocated" when neither
// holds anything.
std::string category_changes_text(const std::vector<category_comparison>& categories, size_t from,
                                  size_t to);

// A recorded stack (matched across snapshots by its text) and the category most of its bytes
// are in, in the snapshot it grew in.
struct stack_change {
    matched_stack stack;  // bytes per snapshot, as match_stacks gives them
    memory_category category = memory_category::unknown;
};
// At most `count` recorded stacks whose bytes grew most from `from` to `to`, most first.
std::vector<stack_change> stacks_grown_most(const std::vector<peak_contents>& peaks, size_t from,
                                            size_t to, size_t count);

// The median rank, which the rank that peaks highest is compared with: the ranks ordered by
// their reserved peak, the middle one, the lower middle one for an even count (with two ranks,
// the other rank); on a tie `highest` counts as the higher, so it is never its own median
// unless it is the only rank.
size_t median_rank(const std::vector<uint64_t>& reserved_peaks, size_t highest);
// What "median rank" means for `rank_count` ranks, in words for the reports.
std::string median_rank_meaning(size_t rank_count);

// The rank that peaks highest (reserved, the first on a tie) against the median rank.
struct rank_explanation {
    size_t highest = 0;  // indexes into the models given
    size_t median = 0;
    std::vector<peak_contents> peaks;  // of every model, at its peak allocated
    std::vector<category_comparison> categories;
    std::vector<stack_change> stacks;  // grown most from median to highest
};
// `stack_count` stacks at most. With one model, `highest == median` and there is nothing to
// explain.
// `categorized[i]` is models[i] with every recorded frame, as for contents_at_peak.
rank_explanation explain_highest_rank(const std::vector<const device_model*>& models,
                                      const std::vector<const device_model*>& categorized,
                                      size_t stack_count);
inline rank_explanation explain_highest_rank(const std::vector<const device_model*>& models,
                                             size_t stack_count) {
    return explain_highest_rank(models, models, stack_count);
}

}  // namespace memtrail::analysis

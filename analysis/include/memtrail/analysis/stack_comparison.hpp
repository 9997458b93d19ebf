#pragma once
// Live memory by allocation stack across several snapshots (the ranks of one job, or a run
// before and after a change), as `memtrail top` and `memtrail diff` set them side by side. Stack
// ids belong to one snapshot, so stacks are matched by their frames' text.

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "memtrail/analysis/flame.hpp"
#include "memtrail/snapshot/model.hpp"

namespace memtrail::analysis {

// One snapshot's live bytes per stack (as bytes_by_stack gives them) and the snapshot whose
// stacks they are.
struct stacks_in_snapshot {
    const snapshot::snapshot* source = nullptr;
    std::vector<stack_bytes> stacks;
};

// The live bytes of all the stacks.
uint64_t total_bytes(const std::vector<stack_bytes>& stacks);

// What stacks are matched by: their frame labels, outermost first, one a line; the lines of
// folded runs without their lengths (without_run_length).
std::string stack_text(const snapshot::snapshot& source, snapshot::stack_id stack);

// Why blocks of `source` have no stack, in one sentence for the line that sets them apart:
// the snapshot recorded no stacks at all; or Python frames only, which the threads that run no
// Python (above all autograd's backward threads) do not have; or else no frames
// were recorded for them.
std::string why_unstacked(const snapshot::snapshot& source);

// One stack (by its text) in each snapshot.
struct matched_stack {
    std::vector<uint64_t> bytes;  // per snapshot; 0 where the snapshot has no such stack
    // Where its frames can be read: the first snapshot that has it, and its first id there in
    // the order of that snapshot's stacks.
    size_t first_holder = 0;
    snapshot::stack_id stack = snapshot::no_id;

    // bytes[i] - bytes[0].
    int64_t change_from_first(size_t i) const;
    // The change from the first snapshot that is largest in magnitude (the earliest such).
    int64_t largest_change() const;
    // The most bytes any one snapshot holds.
    uint64_t most_bytes() const;
};

// Every stack of every snapshot, in the order of their text; the stacks of one snapshot with the
// same text count as one.
std::vector<matched_stack> match_stacks(const std::vector<stacks_in_snapshot>& snapshots);

// At most `count` stacks, those holding the most bytes in any one snapshot, most first.
std::vector<matched_stack> largest_stacks(const std::vector<stacks_in_snapshot>& snapshots,
                                          size_t count);

// At most `count` stacks, those whose bytes changed most from the first snapshot (the base),
// largest change in magnitude first; stacks that hold the same everywhere are left out.
std::vector<matched_stack> stacks_changed_most(const std::vector<stacks_in_snapshot>& snapshots,
                                               size_t count);

}  // namespace memtrail::analysis

#pragma once
// Live memory by allocation stack: per stack, as a flame graph (a tree of frames, outermost at
// the root), as folded stacks for flamegraph.pl and speedscope, and as a differential flame
// graph between two moments or two snapshots. Frames are matched by their text, so graphs from
// different snapshots compare.

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "memtrail/analysis/device_model.hpp"
#include "memtrail/analysis/frame_text.hpp"
#include "memtrail/analysis/memory_state.hpp"

namespace memtrail::analysis {

// Which blocks count as live.
enum class live_measure {
    allocated,  // blocks callers hold
    active,     // also blocks freed by the caller but waiting for other streams
};

// Live bytes of one allocation stack.
struct stack_bytes {
    snapshot::stack_id stack = snapshot::no_id;
    uint64_t bytes = 0;
    uint64_t blocks = 0;
    uint64_t largest_block = 0;
};

// Live bytes per stack in `state`, most bytes first.
std::vector<stack_bytes> bytes_by_stack(const memory_state& state, live_measure measure);

struct flame_node {
    std::string name;         // frame label; "all" for the root
    uint64_t bytes = 0;       // blocks whose stack passes through this frame
    uint64_t self_bytes = 0;  // blocks whose stack ends at this frame
    uint64_t blocks = 0;
    uint32_t parent = 0;
    uint32_t depth = 0;
    std::vector<uint32_t> children;  // indices into flame_graph::nodes, most bytes first
};

struct flame_graph {
    // nodes[0] is the root and holds the total; blocks without a recorded stack sit under a
    // child named unknown_stack_label.
    std::vector<flame_node> nodes;
    uint64_t total() const { return nodes.empty() ? 0 : nodes[0].bytes; }
};

// The graph of per-stack byte counts (stacks of `source`).
flame_graph build_flame(const snapshot::snapshot& source, const std::vector<stack_bytes>& stacks);

flame_graph flame_at(const device_model& model, size_t position, live_measure measure);
// At the first position where the allocated (or active) curve peaks.
flame_graph flame_at_peak(const device_model& model, live_measure measure);
// Each stack at the most it holds at any position in [first, last]: shows every stack's worst
// moment, so the total is the sum of those maxima, not the live bytes of one position.
flame_graph flame_over_range(const device_model& model, size_t first, size_t last,
                             live_measure measure);
// What the range [first, last] added and kept: the blocks live at `last` (as `measure` counts
// them) whose allocation is inside the range. Its total is the growth the range left behind,
// not counting what it freed.
flame_graph flame_allocated_in_range(const device_model& model, size_t first, size_t last,
                                     live_measure measure);

// One line per frame with self bytes: "outer;inner;leaf BYTES". Frame labels have ';' replaced
// by ','. The values sum to the graph's total.
std::string to_folded(const flame_graph& graph);

struct flame_diff_node {
    std::string name;
    uint64_t before = 0;
    uint64_t after = 0;
    uint32_t parent = 0;
    uint32_t depth = 0;
    std::vector<uint32_t> children;  // largest change first
    int64_t delta() const { return static_cast<int64_t>(after) - static_cast<int64_t>(before); }
};

struct flame_diff {
    std::vector<flame_diff_node> nodes;  // nodes[0] is the root
};

// Both graphs merged frame by frame: what each stack held before and after.
flame_diff diff_flames(const flame_graph& before, const flame_graph& after);

}  // namespace memtrail::analysis

#pragma once
// Timelines at screen resolution that count every allocation: memory stacked by what each
// allocation is (its category or its allocation stack), and the segments over time with the
// allocated and free bytes inside each (memory_viz's Active Cached Segment Timeline).
//
// A column stands for a run of positions; it shows the state at one of them (where the
// column's total is highest), so a column never draws less than the curve it sits on, and an
// allocation of any size adds its bytes to its key's layer.

#include <cstddef>
#include <cstdint>
#include <vector>

#include "memtrail/analysis/categories.hpp"
#include "memtrail/analysis/device_model.hpp"

namespace memtrail::analysis {

// The positions [first, last) one column stands for.
struct column_span {
    size_t first = 0;
    size_t last = 0;
};

enum class stack_key : uint8_t { category, stack };

struct stacked_timeline {
    // The layers, bottom first: category indices (stack_key::category) or stack ids. When
    // `has_rest` the last layer is every key not among them.
    std::vector<uint32_t> keys;
    bool has_rest = false;
    std::vector<size_t> positions;  // per column, the position it shows
    std::vector<uint64_t> bytes;    // bytes[column * layers() + layer]

    size_t layers() const { return keys.size() + (has_rest ? 1 : 0); }
    uint64_t at(size_t column, size_t layer) const { return bytes[column * layers() + layer]; }
};

// Memory in `columns` (ascending, not overlapping) stacked by `key`. Allocations count until
// their free request, or with `include_pending` until the free completes. By stack, the
// `max_layers` stacks holding the most bytes over the columns get layers of their own, the rest
// one layer together; by category every category has a layer.
stacked_timeline stack_allocations(const device_model& model, const category_map& categories,
                                   stack_key key, const std::vector<column_span>& columns,
                                   bool include_pending, size_t max_layers);

// One segment's life (an expandable segment's mapped pieces each count as one).
struct segment_life {
    uint64_t address = 0;
    uint64_t size = 0;
    uint64_t stream = 0;
    bool is_large = true;
    size_t begin = 0;  // position after its creation; 0 when it existed before the trace
    size_t end = 0;    // position after its release; event_count() + 1 when never released
};

struct segment_timeline {
    // Ordered by pool (large first), stream, then creation: the order the columns stack them.
    std::vector<segment_life> segments;
    std::vector<size_t> positions;  // per column, the position it shows (most reserved)
    struct cell {
        uint32_t segment = 0;    // index into segments
        uint64_t allocated = 0;  // bytes of blocks in it callers hold (or pending, when counted)
    };
    // Per column, the segments live at its position, in the order of `segments`.
    std::vector<std::vector<cell>> columns;
};

// The segments over `columns` with the bytes allocated inside each.
segment_timeline segments_over_time(const device_model& model, const category_map& categories,
                                    const std::vector<column_span>& columns, bool include_pending);

}  // namespace memtrail::analysis

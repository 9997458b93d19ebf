#pragma once
// `memtrail export --format perfetto`: the trace as a Perfetto protobuf trace (ui.perfetto.dev,
// trace_processor). Names, categories, argument names and stacks are interned (Perfetto's
// InternedData, referred to by iid), so the file grows with what is distinct, not with events.

#include <cstddef>
#include <ostream>

#include "memtrail/analysis/categories.hpp"
#include "memtrail/analysis/device_model.hpp"

namespace memtrail::cli {

// The trace entries an export covers, [first, end) by index: positions first (the state before
// the range) to end (the state after its last entry).
struct entry_range {
    size_t first = 0;
    size_t end = 0;
    bool whole = true;  // no --from/--to: everything, annotations from before the trace too
    bool empty() const { return first >= end; }
};

// Writes a process track for the device with counter tracks of allocated, active and reserved
// bytes (one sample per change), the allocations alive during the range as slices (from alloc
// to free request; on as many tracks as were ever alive at once, named by size and innermost
// frame, their memory category as the slice's category, address, sizes and stack as
// arguments), annotations as slices and markers, and OOMs as instants. `categories` holds the
// categories of `model`'s lifetimes (the same lifetimes, in the same order).
void write_perfetto(const analysis::device_model& model, const analysis::category_map& categories,
                    const entry_range& range, std::ostream& out);

}  // namespace memtrail::cli

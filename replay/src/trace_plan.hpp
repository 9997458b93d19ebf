#pragma once
// A trace records what the allocator did, not what it was asked to do. The plan recovers the
// requests: which entries drive the replay (allocations, frees, deferred completions, cache
// releases) and which are consequences the allocator will produce by itself.

#include <cstdint>
#include <vector>

#include "memtrail/core/device.hpp"
#include "memtrail/snapshot/model.hpp"

namespace memtrail::replay::detail {

enum class step_kind : uint8_t {
    allocate,         // alloc entry: allocate(size, stream)
    allocate_oom,     // oom entry: an allocation that failed
    free,             // free_requested whose free_completed follows at once
    free_deferred,    // free_requested used on other streams: completes later
    complete_free,    // the later free_completed of a deferred free
    empty_cache,      // segment frees no allocation explains
    snapshot,         // a snapshot was taken
    consequence,      // produced by the allocator while serving another step
};

struct trace_plan {
    std::vector<step_kind> steps;  // one per entry
    // Device addresses in the order the allocator will ask for them: segment_alloc addresses
    // and the bases of new expandable segments (the first segment_map outside known ranges).
    std::vector<device_address> device_addresses;
};

trace_plan plan_trace(const std::vector<snapshot::trace_entry>& entries, uint64_t device_total);

}  // namespace memtrail::replay::detail

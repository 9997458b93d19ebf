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
    allocate,                 // alloc entry: allocate(size, stream)
    allocate_oom,             // oom entry: an allocation that failed
    free,                     // free_requested whose free_completed follows at once
    free_deferred,            // free_requested used on other streams: completes later
    complete_free,            // the later free_completed of a deferred free
    complete_before_release,  // a deferred free completed just before an allocation makes a
                              // new segment (or fails), with or without releases in between:
                              // either the allocation's own event check completed it or the
                              // synchronization on its release path did
    empty_cache,              // segment frees no allocation explains: an empty_cache, or
                              // (see private_part_start) one with a private pool emptied in it
    release_run,              // segment frees right before an allocation's new segment: that
                  // allocation's releases, or an empty_cache first (decided by the state)
    snapshot,     // a snapshot was taken
    consequence,  // produced by the allocator while serving another step
};

struct trace_plan {
    std::vector<step_kind> steps;      // one per entry
    std::vector<size_t> next_request;  // for release_run: the index of the allocation (alloc/oom)
    // For free_deferred: the index of its free_completed (entries.size() if it never completes).
    // The replay orders deferred frees by it, so a synchronization that completes several at
    // once completes them in the trace's order.
    std::vector<size_t> completion;
    // For complete_before_release: whether segment releases follow before the new segment.
    std::vector<uint8_t> releases_follow;
    // Device addresses in the order the allocator will ask for them: segment_alloc addresses
    // and the bases of new expandable segments (the first segment_map outside known ranges).
    std::vector<device_address> device_addresses;

    // Segments, for private pools: every alloc entry names the entry that created the segment
    // it lands in (a segment_alloc, or the map that reserved an expandable segment; entries.size()
    // if none did) and whether that segment was created for it. Each empty_cache or release_run
    // step lists the creators of the segments its run gives back.
    std::vector<size_t> segment_creator;
    std::vector<uint8_t> new_segment;
    std::vector<std::vector<size_t>> frees_in_run;
    // For empty_cache steps whose run gives back a small segment before a large one: where in
    // frees_in_run that private pool's segments begin (the first small one); trace_plan::none
    // otherwise. PyTorch empties the default pools' large blocks before their small ones, a
    // private pool's small blocks before its large ones (release_cached_blocks), so the run
    // empties a private pool (a MemPool destroyed), after the default pools' large segments.
    static constexpr size_t none = SIZE_MAX;
    std::vector<size_t> private_part_start;
    // For creators whose segment lasts to the end: its address (to find its pool in the final
    // segments).
    std::vector<device_address> lasting_segment;
    // For creators of segments that sat wholly free through an OOM that did not release them:
    // an OOM returns every cached segment of the default pools and of private pools no longer
    // held, so such a segment belonged to a private pool that a graph or MemPool still held.
    std::vector<uint8_t> held_private;
    // For creators that reserved an expandable segment: the end of the reservation.
    std::vector<device_address> reservation_end;
    // For oom entries: the bytes the original held on the device at that moment (segments and
    // mapped pages), so a replay can make the device as full as the original found it.
    std::vector<uint64_t> reserved_at;
};

trace_plan plan_trace(const std::vector<snapshot::trace_entry>& entries, uint64_t device_total);

}  // namespace memtrail::replay::detail

#pragma once
// Why an allocation failed: for an `oom` entry in a trace, what was asked, what the device and
// the cache had, which live blocks stood in the way, and a verdict.

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "memtrail/analysis/device_model.hpp"
#include "memtrail/analysis/memory_state.hpp"

namespace memtrail::analysis {

// Free space cached in the segments of one pool and stream (a request can only use these).
struct free_space {
    bool is_large = true;
    uint64_t stream = 0;
    uint64_t free = 0;
    uint64_t largest_free = 0;
    size_t free_blocks = 0;
    uint64_t pending_free = 0;  // bytes freed but waiting for other streams
};

// Live blocks that pin a partly free segment of the request's pool and stream: releasing them
// would have opened a free range of the requested size there. The cheapest such run of
// neighbouring blocks per segment.
struct oom_blocker {
    uint64_t segment_address = 0;
    uint64_t range_address = 0;           // where the free range would start
    uint64_t range_size = 0;              // its size (at least the request)
    uint64_t live_bytes = 0;              // bytes that would have to be released
    std::vector<snapshot::block> blocks;  // the live blocks in the range, by address
    bool only_pending_frees() const;
};

enum class oom_verdict {
    fragmentation,  // the allocator's cached free memory would have served it, in one piece
    pending_cross_stream_frees,  // blocks already freed but still used by other streams
    capacity,                    // this process's live blocks fill the device
    memory_cap,         // the allocator's own limit (per-process memory fraction) was reached
    outside_allocator,  // other processes, libraries or the CUDA context hold the memory
    private_pools,  // memory cached in private pools (CUDA graphs, MemPool) would have served it
};
std::string_view verdict_name(oom_verdict verdict);  // for people: "memory cap"
std::string_view verdict_key(oom_verdict verdict);   // stable, for JSON: "memory_cap"

// Live memory at the OOM by the stack that allocated it: what to reduce when the memory is
// really in use (verdict capacity), and who holds the segments otherwise.
struct oom_holder {
    snapshot::stack_id stack = snapshot::no_id;
    uint64_t bytes = 0;  // allocated blocks, pending frees excluded
    size_t blocks = 0;
};

struct oom_report {
    size_t entry = 0;  // index of the oom entry in the trace
    int device = 0;
    int64_t time_ns = 0;
    uint64_t requested = 0;  // the rounded request as recorded
    uint64_t stream = 0;
    bool is_large = true;  // the pool the request belongs to
    snapshot::stack_id stack = snapshot::no_id;
    uint64_t device_free = 0;   // what the device reported free (the entry's address field)
    uint64_t device_total = 0;  // from the snapshot header or the caller; 0 when unknown
    uint64_t segment_size = 0;  // what the allocator asked the device for (the request's segment)
    // Held on the device outside this allocator: total - free - reserved (0 when the total is
    // unknown, see outside_known).
    uint64_t outside = 0;
    bool outside_known = false;
    uint64_t allowed = 0;            // the allocator's cap, when the snapshot records a fraction
    bool cap_inferred = false;       // memory_cap without a recorded fraction: the device had room
    uint64_t private_pool_free = 0;  // cached free bytes in private pools' segments
    uint64_t usable_free = 0;  // cached free bytes the request could use (its pool and stream)
    memory_totals totals;      // allocated, reserved, pending, free inside segments
    std::vector<free_space> free_by_pool;  // per pool and stream, largest free first
    double fragmentation = 0.0;            // 1 - largest free block / free bytes, over all segments
    std::vector<oom_blocker> blockers;     // cheapest first
    std::vector<oom_holder> holders;       // the most bytes first, at most max_blockers
    oom_verdict verdict = oom_verdict::capacity;
    std::string explanation;            // one paragraph saying why the verdict, with its numbers
    std::vector<std::string> unknowns;  // what the snapshot does not say that the verdict needed
};

struct oom_options {
    size_t max_blockers = 10;   // limits the blockers and the holders
    uint64_t device_total = 0;  // the device's total memory when the snapshot lacks it (a pickle)
};

// Indices of the oom entries in the model's trace.
std::vector<size_t> oom_entries(const device_model& model);

// Analyzes the oom entry at `entry` (an index from oom_entries).
/// @throws std::invalid_argument when that entry is not an oom entry.
oom_report analyze_oom(const device_model& model, size_t entry, const oom_options& options = {});

}  // namespace memtrail::analysis

#pragma once
// Why an allocation failed: for an `oom` entry in a trace, what was asked, what the device and
// the cache had, which live blocks stood in the way, and a verdict.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "memtrail/analysis/device_model.hpp"
#include "memtrail/analysis/memory_state.hpp"
#include "memtrail/analysis/segment_pools.hpp"

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

// Where the device's total memory the report assumed came from.
enum class device_total_source {
    snapshot,  // the snapshot records it (memtrail's own snapshots)
    option,    // the caller gave it (--device-memory)
    at_least,  // unknown (a PyTorch pickle): at least what the allocator held and the device
               // reported free at the OOM
};
std::string_view device_total_source_name(device_total_source source);

// The allocator's own limit (torch.cuda.set_per_process_memory_fraction).
struct oom_cap {
    bool binding = false;   // the request failed on it, not on the device
    bool recorded = false;  // from a fraction (the snapshot's or the caller's) and the total
    double fraction = 0.0;  // when recorded
    // Recorded: lower == the cap. Inferred: the cap lies in [lower, upper): the request failed
    // with reserved + its segment (upper), and the most the trace ever reserved fitted (lower).
    uint64_t lower = 0;
    uint64_t upper = 0;
};

// Memory of one private pool at the OOM: cached there, it serves only what the pool's owner
// allocates; releasing the pool (deleting the graph or MemPool) gives its free segments back.
struct oom_private_pool {
    std::optional<segment_pool> pool;  // nullopt: a private pool that the snapshot does not name
    std::string owner;                 // who holds it, for people (segment_pools::owner)
    // Some of its segments' pool is inferred (from their stream, or an OOM left them cached):
    // the snapshot names only the pools of the segments still there at its end.
    bool inferred = false;
    uint64_t stream = 0;
    size_t segments = 0;
    uint64_t reserved = 0;
    uint64_t allocated = 0;   // live and pending blocks
    uint64_t free = 0;        // cached free blocks
    uint64_t releasable = 0;  // segments wholly free: what releasing the pool gives back
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
    // The total the report and its replays assume: device_total, or at least reserved + free.
    uint64_t assumed_device_total = 0;
    device_total_source total_source = device_total_source::at_least;
    uint64_t segment_size = 0;  // what the allocator asked the device for (the request's segment)
    // Held on the device outside this allocator: total - free - reserved (0 when the total is
    // unknown, see outside_known).
    uint64_t outside = 0;
    bool outside_known = false;
    // Who held it, where memtrail run recorded it at this OOM (outside_accounting.hpp).
    std::optional<snapshot::memory_accounting> accounting;
    oom_cap cap;
    uint64_t private_pool_free = 0;               // cached free bytes in private pools' segments
    uint64_t private_pool_releasable = 0;         // wholly free private-pool segments
    std::vector<oom_private_pool> private_pools;  // the most cached free first
    uint64_t usable_free = 0;  // cached free bytes the request could use (its pool and stream)
    memory_totals totals;      // allocated, reserved, pending, free inside segments
    std::vector<free_space> free_by_pool;  // per pool and stream, largest free first
    double fragmentation = 0.0;            // 1 - largest free block / free bytes, over all segments
    std::vector<oom_blocker> blockers;     // cheapest first
    std::vector<oom_holder> holders;       // the most bytes first, at most max_blockers
    oom_verdict verdict = oom_verdict::capacity;  // the primary cause
    std::optional<oom_verdict> secondary;         // a second cause, where one held as well
    std::string explanation;            // one paragraph saying why the verdicts, with their numbers
    std::vector<std::string> unknowns;  // what the snapshot does not say that the verdict needed
};

struct oom_options {
    size_t max_blockers = 10;   // limits the blockers and the holders
    uint64_t device_total = 0;  // the device's total memory when the snapshot lacks it (a pickle)
    double memory_fraction = 0.0;  // the per-process fraction the program set, when known
};

// Indices of the oom entries in the model's trace.
std::vector<size_t> oom_entries(const device_model& model);

// Analyzes the oom entry at `entry` (an index from oom_entries).
/// @throws std::invalid_argument when that entry is not an oom entry.
oom_report analyze_oom(const device_model& model, size_t entry, const oom_options& options = {});

}  // namespace memtrail::analysis

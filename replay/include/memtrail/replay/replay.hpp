#pragma once
// Replays a recorded allocator trace (PyTorch's or memtrail's) through memtrail's allocator on
// the simulated device, optionally under other settings, and compares the outcome with the
// original: used by `memtrail replay` (parity with PyTorch) and `memtrail whatif`.

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "memtrail/core/allocator_config.hpp"
#include "memtrail/snapshot/model.hpp"

namespace memtrail::replay {

struct replay_options {
    allocator_config config;     // the settings to replay under
    int device = 0;              // which device's trace to replay
    uint64_t device_memory = 0;  // simulated capacity; 0: the snapshot's device total, else 80 GiB
    double memory_fraction =
        0.0;  // per-process fraction (0 = none), as set_per_process_memory_fraction
    // Take device addresses from the trace's segment_alloc / segment_map entries so the result
    // compares address by address. Off for what-if runs under other settings.
    bool reuse_trace_addresses = true;
    // What-if: before the entry at this index, release every private pool still held (delete
    // the CUDA graphs and MemPools); SIZE_MAX for never.
    size_t release_private_pools_before = SIZE_MAX;
    // Stop at the first OOM (true) or skip the failed allocation and its free and go on.
    bool stop_at_oom = false;
    // The original's final memory_stats(), when known: a few steps of a trace have two
    // readings, and counters the trace does not show (retries) tell them apart.
    const std::map<std::string, int64_t>* expected_stats = nullptr;
};

struct replay_result {
    snapshot::snapshot final_state;         // segments/blocks at the end + the replay's own trace
    std::map<std::string, int64_t> stats;   // memory_stats() names
    uint64_t allocations = 0;               // alloc entries replayed
    uint64_t ooms = 0;                      // allocations that failed
    std::optional<size_t> first_oom_entry;  // index in the input trace
    std::vector<size_t> oom_entries;        // every allocation that failed, by input index
    uint64_t peak_reserved = 0;
    uint64_t peak_allocated = 0;
    uint64_t device_allocations = 0;  // segment allocations + maps
    uint64_t unmatched_frees = 0;     // frees of addresses the replay never allocated
};

// The device's total memory a replay runs with, and where it came from.
enum class device_total_source {
    option,    // replay_options::device_memory
    recorded,  // the snapshot's device properties (memtrail snapshots record it; pickles do not)
    assumed,   // neither: 80 GiB
};
struct device_total {
    uint64_t bytes = 0;
    device_total_source source = device_total_source::assumed;
};
device_total device_total_of(const snapshot::snapshot& input, const replay_options& options);

// Throws std::runtime_error with a clear message when the trace is inconsistent (a free of an
// address never allocated, ...), naming the entry index.
replay_result replay_trace(const snapshot::snapshot& input, const replay_options& options);

struct parity_report {
    bool trace_equal = false;
    bool segments_equal = false;
    bool stats_equal = false;      // true when no expected stats are given
    std::string first_difference;  // human-readable, empty when all equal
    bool ok() const { return trace_equal && segments_equal && stats_equal; }
};

// Compares a replay with the original: trace entry by entry in (action, address, size, stream),
// final segments and blocks (address, size, requested_size, state), and counters when given.
parity_report compare_with_original(const snapshot::snapshot& original, const replay_result& replay,
                                    const std::map<std::string, int64_t>* expected_stats,
                                    int device = 0);

}  // namespace memtrail::replay

#pragma once
// Synthetic traces for tests and benchmarks, one home for all of them:
//  - make_synthetic_history: a random workload run through memtrail's allocator on the simulated
//    device, so every entry, segment and counter is the allocator's own (replay parity);
//  - make_stacked_history: any number of entries the analysis reconstructs without an anomaly,
//    made without the allocator, so ten million entries take seconds (analysis at scale);
//  - make_format_trace: entries with the field values of a training job's trace but no
//    allocator's rules behind them (the sizes and speeds of the file formats).
// Each is deterministic for its seed.

#include <cstddef>
#include <cstdint>
#include <string>

#include "memtrail/snapshot/model.hpp"

namespace memtrail::replay {

struct synthetic_options {
    uint64_t operations = 100000;  // allocation and free requests
    uint64_t seed = 1;
    std::string conf;  // allocator settings the history is made under
    uint64_t device_memory = 16ull << 30;
    size_t live_slots = 256;
    bool cross_stream_frees = true;  // some frees wait for other streams (record_stream)
    bool empty_cache_calls = true;   // the program empties the cache now and then
};

// A random workload (several streams, record_stream, empty_cache, log-uniform sizes) recorded
// in PyTorch's trace vocabulary from an empty allocator, plus the final segments and statistics,
// as a PyTorch snapshot would hold them.
snapshot::snapshot make_synthetic_history(const synthetic_options& options);

// At least `entry_count` entries on device 0 (one stream, 64 stacks of 12 Python frames) and the
// final segments: 256 small-pool segments of 2 MiB used as stacks (blocks are taken at the top of
// the free range and freed last-in first-out), so every block's size follows the allocator's
// rules.
snapshot::snapshot make_stacked_history(size_t entry_count, uint64_t seed = 1);

// Exactly `events` entries on device 0 shaped like a training job's: allocations of realistic
// sizes (512 B rounding, log-spread from 512 B to 256 MiB) carved out of a few large segments,
// freed a while later (free_requested, then free_completed), on 2 streams, from 5000 distinct
// stacks, with nanosecond timestamps a few microseconds apart. No segments.
snapshot::snapshot make_format_trace(size_t events, uint64_t seed = 42);

}  // namespace memtrail::replay

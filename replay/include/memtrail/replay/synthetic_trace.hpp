#pragma once
// Synthetic allocator histories for tests and benchmarks: a random workload (several streams,
// record_stream, empty_cache, log-uniform sizes) run through memtrail's allocator on the
// simulated device, recorded in PyTorch's trace vocabulary from an empty allocator.

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

// The history plus the final segments and statistics, as a PyTorch snapshot would hold them.
snapshot::snapshot make_synthetic_history(const synthetic_options& options);

}  // namespace memtrail::replay

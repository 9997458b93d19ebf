#pragma once
// Remedies for an out-of-memory, proven by replay: the trace is replayed under other allocator
// settings (or without the memory cap) on a device as full as the original found it, and a
// remedy counts only when the allocation that failed then succeeds.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "memtrail/replay/replay.hpp"

namespace memtrail::replay {

// What a remedy changes: an allocator setting (PYTORCH_CUDA_ALLOC_CONF) or the program (its
// memory cap, its CUDA graphs and MemPools).
enum class remedy_kind { allocator_setting, no_memory_cap, release_private_pools };

struct oom_remedy {
    std::string description;  // "expandable_segments:True", "without the memory cap", ...
    bool avoids = false;      // the failed allocation succeeds and nothing fails before it
    remedy_kind kind = remedy_kind::allocator_setting;
    std::optional<size_t> first_oom_entry;  // where the replay under it failed first, if it did
    uint64_t peak_reserved = 0;
    uint64_t peak_allocated = 0;
};

struct oom_remedy_options {
    int device = 0;
    uint64_t device_memory = 0;  // the device's total; 0: the snapshot's, else 80 GiB
    double memory_fraction = 0;  // the cap the program ran under, when known
    // The cap in bytes when no fraction is known (inferred: the device had room, the allocator
    // refused): the least the trace allows, so every remedy that avoids the OOM under it avoids
    // it under any cap the trace allows.
    uint64_t cap_bytes = 0;
    // Also try releasing the private pools held at the OOM (deleting the graph or MemPool).
    bool try_releasing_private_pools = false;
};

struct oom_remedies {
    // The original settings replayed: whether they fail at the same entry (if not, the
    // remedies below are not evidence).
    bool baseline_reproduces = false;
    std::optional<size_t> baseline_first_oom;
    std::vector<oom_remedy> remedies;
};

// Tries each remedy for the oom entry at `entry` (an index in the device's trace).
oom_remedies try_oom_remedies(const snapshot::snapshot& input, size_t entry,
                              const oom_remedy_options& options);

}  // namespace memtrail::replay

#pragma once
// The words for an OOM's remedies, proven by what-if replays (replay::try_oom_remedies): one home
// for them, so that `memtrail oom`, the viewer (which reads `memtrail oom --json`, keeping the
// allocator out of the viewer) and the report say the same.

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "memtrail/analysis/oom_report.hpp"

namespace memtrail::analysis {

// What a remedy changes: an allocator setting (PYTORCH_CUDA_ALLOC_CONF) or the program (its
// memory cap, its CUDA graphs and MemPools).
enum class remedy_kind : uint8_t { allocator_setting, no_memory_cap, release_private_pools };

// The key `memtrail oom --json` writes for a kind, and back.
std::string_view remedy_kind_key(remedy_kind kind);
std::optional<remedy_kind> remedy_kind_from_key(std::string_view key);

// One remedy tried, and what the replay under it found.
struct remedy_outcome {
    std::string setting;  // "expandable_segments:True", "no memory cap", ...
    remedy_kind kind = remedy_kind::allocator_setting;
    bool avoids = false;
    uint64_t peak_reserved = 0;
};

// What the replays assumed about the device and the cap: "on a device of 80GiB (the
// snapshot's) under the cap of 4GiB".
std::string replay_assumptions(const oom_report& r);
// The heading of the list: "remedies, each checked by replaying the trace under it on ...:".
std::string remedies_heading(const oom_report& r);
// Why no remedy is listed when the original settings, replayed, do not fail at this entry.
std::string_view remedies_not_checked_text();
// "with expandable_segments:True this OOM does not happen (peak reserved 3GiB)".
std::string remedy_sentence(const remedy_outcome& remedy);
// What to do when no allocator setting avoids it ("no allocator setting avoids it under the cap:
// raise the cap to at least ..."); nullopt when one does.
std::optional<std::string> remedies_conclusion(const oom_report& r,
                                               std::span<const remedy_outcome> remedies);

}  // namespace memtrail::analysis

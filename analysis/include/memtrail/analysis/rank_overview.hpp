#pragma once
// One rank's snapshot at a glance, for setting the ranks of a distributed job side by side
// (`memtrail ranks`, the viewer's Ranks view): its peaks and when they happened, where its trace
// ended, and how many allocations, device allocations and OOMs the trace holds. And which rank a
// file is, as far as its path tells: snapshots carry no rank of their own.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "memtrail/analysis/device_model.hpp"

namespace memtrail::analysis {

// Where a curve is highest: its first such position, and the time of the entry applied there.
struct curve_peak {
    uint64_t bytes = 0;
    size_t position = 0;
    int64_t time_ns = 0;
};

struct rank_overview {
    int device = 0;             // the device modelled
    std::vector<int> devices;   // every device the snapshot has a trace or segments for
    size_t entries = 0;         // trace entries of the modelled device
    int64_t first_time_ns = 0;  // time of the first entry (the snapshot's time without a trace)
    curve_peak peak_allocated;
    curve_peak peak_reserved;
    uint64_t end_allocated = 0;
    uint64_t end_reserved = 0;
    // Counted over the trace, as the model's counters at its end count them.
    int64_t allocations = 0;         // blocks handed to callers (allocation.all.allocated)
    int64_t device_allocations = 0;  // segments allocated or mapped (num_device_alloc)
    int64_t ooms = 0;                // oom entries (num_ooms)
};

curve_peak peak_of(const device_model& model, series s);
rank_overview overview_of(const device_model& model);
// The device modelled, and the snapshot's others when it has more: "1", or "1 of 0,1".
std::string devices_text(const rank_overview& rank);

// What adds up over the ranks: each rank's own peak (they need not coincide), the end, the
// counts.
struct rank_totals {
    uint64_t peak_allocated = 0;
    uint64_t peak_reserved = 0;
    uint64_t end_allocated = 0;
    uint64_t end_reserved = 0;
    int64_t allocations = 0;
    int64_t device_allocations = 0;
    int64_t ooms = 0;
};
void add_to(rank_totals& totals, const rank_overview& rank);

// The rank a path names: the number in its last "rank<N>" (also "rank_N", "rank-N", "RANK.N"),
// where "rank" does not continue a word ("frank2" names none); the directories count too, as in
// run/rank1/snapshot.pickle. nullopt when the path names none.
std::optional<int> rank_in_path(std::string_view path);

// Why snapshots `a` and `b` cannot be two ranks of one distributed job, from what snapshots hold
// (no job id): written by another producer (tool and version), on other devices (their count,
// names and memory, compared without their numbers, which differ by rank), under other allocator
// settings, by the same process (same host and pid: two moments of one rank), or at times more
// than job_time_gap apart (the spans from each one's first trace entry to when it was taken, as
// ranks of one job run together). nullopt when nothing tells them apart.
inline constexpr int64_t job_time_gap_ns = 3600'000'000'000;  // an hour
std::optional<std::string> why_not_one_job(const snapshot::snapshot& a,
                                           const snapshot::snapshot& b);

// Ranks of files opened together: what their paths name when each names one and no two name the
// same, else their positions 0, 1, 2, ...
std::vector<int> ranks_of_paths(const std::vector<std::string>& paths);

}  // namespace memtrail::analysis

#pragma once
// One rank's snapshot at a glance, for setting the ranks of a distributed job side by side
// (`memtrail ranks`, the viewer's Ranks view): its peaks and when they happened, where its trace
// ended, and how many allocations, device allocations and OOMs the trace holds. Which job and
// rank a file is: rank_jobs.hpp.

#include <cstddef>
#include <cstdint>
#include <string>
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

    rank_totals& operator+=(const rank_totals& other);
    bool operator==(const rank_totals&) const = default;
};
void add_to(rank_totals& totals, const rank_overview& rank);

}  // namespace memtrail::analysis

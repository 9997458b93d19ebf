#pragma once
// What a built device_model holds.

#include <memory>
#include <vector>

#include "allocator_rules.hpp"
#include "memtrail/analysis/device_model.hpp"
#include "min_max_pyramid.hpp"
#include "state_engine.hpp"

namespace memtrail::analysis {

struct device_model::impl {
    std::shared_ptr<const snapshot::snapshot> source;
    int device = 0;
    const std::vector<snapshot::trace_entry>* entries = nullptr;  // empty_entries when no trace
    std::vector<snapshot::trace_entry> empty_entries;
    detail::allocator_rules rules;
    std::vector<detail::engine_checkpoint> checkpoints;  // by position; the first is position 0
    std::vector<uint64_t> curves[3];                     // by series
    detail::min_max_pyramid pyramids[3];
    size_t peaks[3] = {0, 0, 0};
    std::vector<int64_t> time_running_max;  // only when entry times are not sorted
    std::vector<allocation_lifetime> lifetimes;
    reconstruction_report report;

    // An engine holding the state after `position` entries.
    detail::state_engine engine_at(size_t position) const;
};

}  // namespace memtrail::analysis

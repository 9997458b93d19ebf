#pragma once
// What the private pools keep between frames (view_pools.cpp): the pools of the device's segments
// and the pool filter the segment and timeline views share.

#include <cstddef>
#include <cstdint>
#include <future>
#include <optional>
#include <string>
#include <vector>

#include <imgui.h>

#include "memtrail/analysis/categories.hpp"
#include "memtrail/analysis/flame.hpp"
#include "memtrail/analysis/memory_state.hpp"
#include "memtrail/analysis/oom_report.hpp"
#include "memtrail/analysis/range_changes.hpp"
#include "memtrail/analysis/segment_pools.hpp"
#include "memtrail/analysis/stacked_timeline.hpp"
#include "memtrail/analysis/timeline.hpp"
#include "memtrail/viewer/rank_table.hpp"
#include "memtrail/viewer/view.hpp"

namespace memtrail::viewer {

// the segment and timeline views share.
struct view::pools_state {
    bool valid = false;
    size_t device_index = 0;
    analysis::segment_pools pools;
    analysis::pool_filter filter;
    // The shown device's pools, rebuilt when the device changes (the filter with them).
    const analysis::segment_pools& of(const view& v);
    // The filter's combo; draws nothing when the device has no private pool. True when the
    // filter changed.
    bool draw_filter(const view& v);
};

}  // namespace memtrail::viewer

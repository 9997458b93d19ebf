#pragma once
// What the allocation view keeps between frames: its settings, caches and background jobs
// (view_allocation.cpp).

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

struct view::allocation_state {
    // Blocks live at the moment, largest first, to pick an allocation from.
    bool valid = false;
    size_t device_index = 0;
    size_t position = 0;
    std::vector<snapshot::block> blocks;

    // What view::draw_allocation shows with no allocation selected.
    void draw_live_list(view& v);
    // The allocation's life drawn over the trace.
    static void lifetime_strip(const view& v, const analysis::allocation_lifetime& life,
                               size_t freed_at, size_t released_at);
};

}  // namespace memtrail::viewer

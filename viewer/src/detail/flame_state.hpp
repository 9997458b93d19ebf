#pragma once
// What the flame view keeps between frames: its settings, caches and background jobs
// (view_flame.cpp).

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

// What the graph counts: the blocks live at the moment or at the peak, each stack at its
// worst over the range, or the blocks allocated inside the range and still live at its end.
enum class view::flame_source { moment, peak, range, range_allocated };

struct view::flame_state {
    flame_source source = flame_source::moment;
    bool icicle = false;
    bool active = false;  // live_measure::active instead of allocated
    uint32_t zoom = 0;    // node shown full width
    // The graph for the key below, computed in the background for peak and range.
    struct key {
        size_t device_index = 0;
        flame_source source = flame_source::moment;
        size_t first = 0, last = 0;
        bool active = false;
        bool operator==(const key&) const = default;
    };
    std::optional<key> shown_key;
    analysis::flame_graph graph;
    uint32_t max_depth = 0;
    std::string match_text;  // search text node_match was computed for
    std::vector<int8_t> node_match;
    std::optional<key> pending_key;
    std::future<analysis::flame_graph> pending;
};

}  // namespace memtrail::viewer

#pragma once
// What the ranks view keeps between frames: its settings, caches and background jobs
// (view_ranks.cpp).

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

struct view::ranks_state {
    bool by_time = false;  // x axis: time since each rank's first entry, else event index
    bool show_reserved = true;
    // Each rank's curves at the plot's resolution, for the key below.
    struct key {
        std::vector<const device_document*> devices;  // in row order
        int width = 0;
        bool by_time = false;
        bool operator==(const key&) const = default;
    };
    std::optional<key> cached;
    struct curves {
        std::vector<analysis::curve_bucket> allocated, reserved;
        float width = 0;  // pixels the rank's trace spans
    };
    std::vector<curves> per_row;
    uint64_t y_max = 1;
    void rebuild(const std::vector<const device_document*>& devices, int width);

    // The phases of view::draw_ranks after its controls, in order.
    void draw_table(view& v, const std::vector<rank_row>& rows);
    void draw_plot(const view& v, const std::vector<rank_row>& rows);
    void draw_legend(view& v, const std::vector<rank_row>& rows);
};

}  // namespace memtrail::viewer

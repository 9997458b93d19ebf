#pragma once
// What the events view keeps between frames: its settings, caches and background jobs
// (view_events.cpp).

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

struct view::events_state {
    bool action_shown[12] = {true, true, true, true, true, true,
                             true, true, true, true, true, true};
    uint64_t min_size = 0;
    uint64_t max_size = 0;      // 0: no limit
    int stream = -1;            // index into dev().streams; -1: all
    bool stack_filter = false;  // keep entries whose stack matches the search
    // The filtered entry indices, built a slice per frame so no frame stalls.
    bool filtered = false;  // false: every entry is shown, `rows` unused
    std::vector<uint32_t> rows;
    size_t scanned = 0;
    size_t filter_device = 0;
    std::string filter_key;  // the filter the rows were built for
    size_t last_moment = static_cast<size_t>(-1);
    char jump[24] = {};
    size_t entry_of_row(size_t row) const { return filtered ? rows[row] : row; }

    // The phases of view::draw_events.
    void draw_filters(view& v);
    // Goes on filtering the entries in [scan_first, scan_last), a slice per frame.
    void filter(view& v, size_t scan_first, size_t scan_last);
    void draw_table(view& v, size_t row_count, size_t selected_entry, size_t selected_row,
                    bool scroll_to_selection);
};

}  // namespace memtrail::viewer

#pragma once
// What the segments view keeps between frames: its settings, caches and background jobs
// (view_segments.cpp).

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

struct view::segments_state {
    bool color_by_stack = false;
    // Each row as wide as the others whatever its size; off, rows are drawn to one scale so
    // that a 2 MiB segment is a 32nd of a 64 MiB one.
    bool fit_each_row = false;
    float label_width = 0;  // the widest row label's

    // With a range selected the segments are drawn as at its end, with what the range
    // allocated and freed marked. They are computed in the background when the range or
    // device changes; until then the previous range's stay on screen.
    struct range_cache {
        size_t device_index = 0;
        analysis::range_changes changes;
        analysis::memory_totals totals;
    };
    std::optional<range_cache> range;
    std::future<range_cache> range_job;
    // The changes to draw while the view has a range: its own once computed, else the
    // previous range's; nullptr without a range or before the first are ready.
    const range_cache* changes_of(const view& v);
    // Whether `range` is of the view's range.
    bool range_current(const view& v) const;

    // The segments of this frame that the pool filter lets through, with their pools.
    struct row {
        const snapshot::segment* segment = nullptr;
        std::optional<analysis::segment_pool> pool;  // nullopt: unknown
        bool pool_inferred = false;  // from the segment's stream, the snapshot lacking it
    };
    std::vector<row> rows;

    // "0x7f36fa000000 large  256MiB  stream 2  pool (1, 0) CUDA graph~  new".
    static std::string row_label(const view& v, const row& r,
                                 const analysis::range_changes* changes);
    // One segment's row of view::draw_segments: its label, its blocks as a bar, the selected
    // allocation outlined, and the block under the mouse in a tooltip.
    void draw_row(view& v, const row& r, uint64_t largest_segment, float bar_width,
                  const analysis::allocation_lifetime* selected, size_t position,
                  const analysis::range_changes* changes);
    void draw_blocks(view& v, const snapshot::segment& seg, float bar_x, float scale, float y0,
                     float y1);
    // Marks the blocks the range allocated (a line along the bar's top) and the space it
    // freed (along its bottom), merged per pixel.
    static void draw_changes(const snapshot::segment& seg, const analysis::range_changes& changes,
                             float bar_x, float scale, float y0, float y1);
    void block_tooltip(view& v, const row& r, float bar_x, float scale, size_t position,
                       const analysis::range_changes* changes);
};

}  // namespace memtrail::viewer

#pragma once
// What the timeline view keeps between frames: its settings, caches and background jobs
// (view_timeline.cpp; its layers and legend in view_timeline_layers.cpp).

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

struct view::timeline_state {
    bool by_time = false;  // x axis: wall clock instead of event index
    bool include_pending = true;
    // What the plot stacks: what each allocation is for, its allocation stack, the largest
    // allocations one by one (memory_viz's Active Memory Timeline), or the segments with the
    // free space inside them (memory_viz's Active Cached Segment Timeline).
    enum class stacking { category, stack, allocation, segment };
    stacking mode = stacking::category;
    bool mode_chosen = false;  // on the first frame: by category when categories are known
    int stack_layers = 32;     // detail by stack: the stacks with a colour of their own
    int band_count = 48;       // detail by allocation: the largest allocations as bands
    double view_first = 0;     // visible axis range
    double view_last = 0;
    bool view_set = false;
    // Geometry cached for the visible range and plot width.
    struct band {
        size_t lifetime = 0;
        float x0 = 0, x1 = 0;          // plot pixels
        uint64_t bottom = 0, top = 0;  // bytes
    };
    struct column {
        float x0 = 0, x1 = 0;        // plot pixels
        size_t first = 0, last = 0;  // positions
        uint64_t active_min = 0, active_max = 0;
        uint64_t reserved_min = 0, reserved_max = 0;
        uint64_t allocated_max = 0;
    };
    double cached_first = -1, cached_last = -1;
    int cached_width = 0;
    size_t cached_device = 0;
    bool cached_by_time = false, cached_pending = true;
    stacking cached_mode = stacking::category;
    int cached_band_count = 0;
    std::vector<column> columns;
    std::vector<band> bands;
    uint64_t y_max = 1;
    // Overview strip, cached for its width.
    int overview_width = 0;
    size_t overview_device = 0;
    bool overview_by_time = false;
    std::vector<analysis::curve_bucket> overview_reserved, overview_allocated;
    // The largest allocations of the visible range (indices into lifetimes, in
    // allocation order). Choosing them looks at every allocation of the trace, so it runs in
    // the background; until it is done the bands of the previous range are drawn.
    struct largest_key {
        size_t device_index = 0;
        size_t first = 0, last = 0;  // positions
        bool include_pending = true;
        size_t count = 0;
        bool operator==(const largest_key&) const = default;
    };
    std::vector<size_t> largest;
    std::optional<largest_key> largest_shown;
    std::optional<largest_key> largest_wanted;
    std::future<std::vector<size_t>> largest_job;
    bool selecting_range = false;
    double range_anchor = 0;

    // Layers by category or stack, or the segments, computed in the background for the key
    // below; until then the previous result is drawn where its columns now fall.
    struct layers_key {
        size_t device_index = 0;
        size_t first = 0, last = 0;  // positions
        int width = 0;
        bool by_time = false;
        stacking mode = stacking::category;
        int detail = 0;
        bool include_pending = true;
        bool operator==(const layers_key&) const = default;
    };
    struct layers_result {
        std::vector<std::pair<double, double>> axis_spans;  // per column, on the x axis
        analysis::stacked_timeline stacked;
        analysis::segment_timeline segments;
    };
    layers_result layers;
    std::optional<layers_key> layers_shown;
    std::optional<layers_key> layers_wanted;
    std::future<layers_result> layers_job;
    // A layer (or a segment: the index of its cell) in a column of `layers`.
    struct layer_hit {
        size_t column = 0;
        size_t layer = 0;
    };
    // The categories at the moment, or at the end of the selected range with those at its
    // start to show the change, for the legend.
    struct legend_key_type {
        size_t device_index = 0;
        size_t position = 0;
        std::optional<size_t> since;  // the range's start
        bool operator==(const legend_key_type&) const = default;
    };
    std::optional<legend_key_type> legend_key;
    analysis::category_breakdown legend;
    analysis::category_breakdown legend_since;

    // Where a frame draws: the annotation lanes, the plot below them, the axis below it.
    struct frame {
        ImVec2 origin;  // top left of the lanes
        float width = 0;
        int lane_count = 0;
        float lanes_height = 0;
        float plot_height = 0;
        ImVec2 plot_origin, plot_end;
        double span = 0;  // of the visible axis range
    };
    float x_of(const frame& f, double axis) const;
    float y_of(const frame& f, uint64_t bytes) const;

    // The phases of view::draw_timeline, in order.
    void draw_controls(view& v);
    frame layout(const view& v) const;
    // Takes finished bands and rebuilds the geometry when the range, width or settings moved.
    void update(view& v, int width);
    void rebuild(view& v, int width);
    void draw_lanes(view& v, const frame& f);
    // The curves and the largest allocations; returns the band under the mouse.
    std::optional<size_t> draw_plot(view& v, const frame& f);
    // The byte grid's lines, and its labels on a backing drawn last so layers never hide them.
    void draw_grid(const frame& f, bool labels) const;
    void draw_marks(view& v, const frame& f);
    void handle_input(view& v, const frame& f, std::optional<size_t> hovered_band,
                      std::optional<layer_hit> hovered_layer);
    // view_timeline_layers.cpp: the mode and detail controls, the legend, the layers.
    void draw_mode_controls(view& v);
    void draw_legend(view& v);
    // Starts computing the layers for the cached columns when they are not the ones shown.
    void request_layers(view& v, int width);
    bool layers_usable(const view& v) const;
    std::optional<layer_hit> draw_layers(view& v, const frame& f);
    std::optional<layer_hit> hit_test(const frame& f) const;
    void layer_tooltip(view& v, const layer_hit& hit);
};

}  // namespace memtrail::viewer

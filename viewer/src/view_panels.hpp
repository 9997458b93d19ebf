#pragma once
// What a view keeps between frames: the caches the features share, and each feature's settings,
// caches and background jobs with the phases it draws in. view.hpp holds only a pointer to
// this; each feature's part is used by its own view_<feature>.cpp alone (the timeline's axis
// setting also by the axis helpers in view.cpp).

#include <cstddef>
#include <cstdint>
#include <future>
#include <memory>
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
#include "remedies_job.hpp"

namespace memtrail::viewer {

struct view::panels {
    // The state at the selected moment, rebuilt when the moment or device changes.
    struct state_cache {
        bool valid = false;
        size_t device_index = 0;
        size_t position = 0;
        analysis::memory_state state;
        analysis::memory_totals totals;
    } state;

    // Which stacks match the search text; rebuilt when the text changes.
    struct search_cache {
        std::string text;
        std::vector<int8_t> stack_match;  // -1 unknown, 0 no, 1 yes
    } search;

    //--- private pools (view_pools.cpp): the pools of the device's segments and the pool filter
    // the segment and timeline views share.
    struct pools_state {
        bool valid = false;
        size_t device_index = 0;
        analysis::segment_pools pools;
        analysis::pool_filter filter;
        // The shown device's pools, rebuilt when the device changes (the filter with them).
        const analysis::segment_pools& of(const view& v);
        // The filter's combo; draws nothing when the device has no private pool. True when the
        // filter changed.
        bool draw_filter(const view& v);
    } pools;

    //--- timeline state (view_timeline.cpp; its layers and legend in view_timeline_layers.cpp)
    struct timeline_state {
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
    } timeline;

    //--- segments state (view_segments.cpp)
    struct segments_state {
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
        static void draw_changes(const snapshot::segment& seg,
                                 const analysis::range_changes& changes, float bar_x, float scale,
                                 float y0, float y1);
        void block_tooltip(view& v, const row& r, float bar_x, float scale, size_t position,
                           const analysis::range_changes* changes);
    } segments;

    //--- flame state (view_flame.cpp)
    // What the graph counts: the blocks live at the moment or at the peak, each stack at its
    // worst over the range, or the blocks allocated inside the range and still live at its end.
    enum class flame_source { moment, peak, range, range_allocated };
    struct flame_state {
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
    } flame;

    //--- events state (view_events.cpp)
    struct events_state {
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
    } events;

    //--- allocation state (view_allocation.cpp)
    struct allocation_state {
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
    } allocation;

    //--- stats state (view_stats.cpp)
    struct stats_state {
        bool valid = false;
        size_t device_index = 0;
        size_t position = 0;
        std::string summary;  // memory_summary() at the moment
    } stats;

    //--- oom state (view_oom.cpp)
    struct oom_state {
        size_t selected = 0;  // index into dev().oom_entries
        // The moment the selection followed last: a new moment selects its latest OOM.
        size_t followed_moment = static_cast<size_t>(-1);
        bool valid = false;
        size_t device_index = 0;
        size_t shown = 0;  // the selected index the report is for
        analysis::oom_report report;
        // The remedies of the file's OOMs, from `memtrail oom --json` (for one device).
        std::unique_ptr<remedies_job> remedies;

        // The phases of view::draw_oom that act on the selection: which OOM to report, and the
        // blocks that stood in the way and the stacks holding the most memory.
        void draw_picker(view& v);
        void draw_remedies(view& v);
        void draw_blockers_and_holders(view& v);
    } oom;

    //--- compare state (view_compare.cpp)
    struct compare_state {
        // Compare the peaks, else the ends; the peaks first, as the view opens at its peak, and
        // as --at (view::select_moment) asks after that.
        bool at_peak = true;
        bool range_ends = false;  // this trace at the range's start against its end
        uint32_t zoom = 0;
        struct key {
            const document* before = nullptr;
            const document* after = nullptr;
            size_t device_index = 0;
            bool at_peak = false;
            // Set when comparing two moments of one trace: the positions compared.
            std::optional<std::pair<size_t, size_t>> moments;
            bool operator==(const key&) const = default;
        };
        std::optional<key> shown_key;
        analysis::flame_diff diff;
        uint32_t max_depth = 0;
        analysis::memory_totals before_totals, after_totals;
        std::optional<key> pending_key;
        struct result {
            analysis::flame_diff diff;
            analysis::memory_totals before_totals, after_totals;
        };
        std::future<result> pending;
        // Takes a finished comparison, and starts one for `want` when none runs and it is not
        // the one shown.
        void update(const view& v, const key& want);
    } compare;

    //--- ranks state (view_ranks.cpp)
    struct ranks_state {
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
    } ranks;
};

}  // namespace memtrail::viewer

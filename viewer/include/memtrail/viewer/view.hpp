#pragma once
// The view of one snapshot: a toolbar, an overview strip, and tabs for the features, each
// feature in a file of its own (view_timeline.cpp, view_segments.cpp, ...). The features are
// linked by one selection: a moment (a position in the device's trace), optionally a range of
// positions and an allocation.
//
// A view only builds ImGui draw lists; it never touches GL, so a frame can be built and
// measured without a window (headless_frame).

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <future>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <imgui.h>

#include "memtrail/analysis/device_model.hpp"
#include "memtrail/analysis/flame.hpp"
#include "memtrail/analysis/memory_state.hpp"
#include "memtrail/analysis/oom_report.hpp"
#include "memtrail/analysis/timeline.hpp"
#include "memtrail/viewer/document.hpp"

namespace memtrail::viewer {

enum class view_kind { timeline, segments, flame, events, allocation, stats, oom, compare, ranks };
inline constexpr int view_kind_count = 9;

std::string_view view_kind_name(view_kind kind);  // "timeline", "segments", ...
bool parse_view_kind(std::string_view name, view_kind& out);

class view {
  public:
    explicit view(std::shared_ptr<const document> doc);

    const document& doc() const { return *doc_; }
    const std::shared_ptr<const document>& shared_doc() const { return doc_; }

    // Draws the whole view into the current ImGui window's remaining space.
    void draw();

    // True while a result the view waits for is computed in the background.
    bool busy() const;

    // --- what the command line and the workspace set -----------------------------------------
    void show(view_kind kind);
    view_kind shown() const { return kind_; }
    // Picks the device by number; false when the snapshot has no such device.
    bool select_device(int device);
    // "end", "peak" or an entry index; false when the text is none of them.
    bool select_moment(std::string_view at);
    // The snapshot the compare view sets against this one (another open view's document).
    void set_comparison(std::shared_ptr<const document> other);
    // The open documents (this one among them): the compare view's baselines, the Ranks view's
    // ranks.
    void set_candidates(std::vector<std::shared_ptr<const document>> documents);
    // The document a click in the Ranks view asked to make the active one, once; else nullptr.
    std::shared_ptr<const document> take_requested_document();

    // --- the linked selection -----------------------------------------------------------------
    size_t moment() const { return moment_; }
    void set_moment(size_t position);
    std::optional<size_t> allocation() const { return allocation_; }
    void set_allocation(std::optional<size_t> lifetime);
    // Selects the largest block live at the moment; false when nothing is live.
    bool select_largest_live_allocation();
    std::optional<std::pair<size_t, size_t>> range() const { return range_; }
    void set_range(std::optional<std::pair<size_t, size_t>> positions);

  private:
    // [SECTION] shared
    const device_document& dev() const { return doc_->devices[device_index_]; }
    const analysis::device_model& model() const { return dev().model; }
    void handle_keys();
    void draw_toolbar();
    const analysis::memory_state& state_at_moment();
    // Whether the stack's text contains the search text (always true with no search).
    bool stack_matches(snapshot::stack_id stack);
    bool searching() const { return search_[0] != '\0'; }
    void stack_tooltip(snapshot::stack_id stack, int max_frames);
    void allocation_tooltip(size_t lifetime);
    // Axis helpers: the timeline's x axis is either the event index or the wall clock.
    double axis_of(size_t position) const;
    size_t position_of_axis(double axis) const;
    double axis_end() const;
    std::string axis_label(double axis) const;

    // [SECTION] features, one file each
    void draw_overview(float height);  // view_timeline.cpp
    void draw_timeline();              // view_timeline.cpp
    void draw_segments();              // view_segments.cpp
    void draw_flame();                 // view_flame.cpp
    void draw_events();                // view_events.cpp
    void draw_allocation();            // view_allocation.cpp
    void draw_stats();                 // view_stats.cpp
    void draw_oom();                   // view_oom.cpp
    void draw_compare();               // view_compare.cpp
    void draw_ranks();                 // view_ranks.cpp
    // The allocation's life drawn over the trace (view_allocation.cpp).
    void lifetime_strip(const analysis::allocation_lifetime& life, size_t freed_at,
                        size_t released_at);

    std::shared_ptr<const document> doc_;
    std::shared_ptr<const document> compare_doc_;
    std::vector<std::shared_ptr<const document>> candidates_;
    std::shared_ptr<const document> requested_document_;
    size_t device_index_ = 0;
    view_kind kind_ = view_kind::timeline;
    bool kind_changed_ = true;  // select the tab on the next frame
    size_t moment_ = 0;
    std::optional<size_t> allocation_;
    std::optional<std::pair<size_t, size_t>> range_;
    char search_[128] = {};
    bool focus_search_ = false;

    // The state at the selected moment, rebuilt when the moment or device changes.
    struct state_cache {
        bool valid = false;
        size_t device_index = 0;
        size_t position = 0;
        analysis::memory_state state;
        analysis::memory_totals totals;
    } state_;

    // Which stacks match the search text; rebuilt when the text changes.
    struct search_cache {
        std::string text;
        std::vector<int8_t> stack_match;  // -1 unknown, 0 no, 1 yes
    } search_cache_;

    // [SECTION] timeline state (view_timeline.cpp)
    struct timeline_state {
        bool by_time = false;  // x axis: wall clock instead of event index
        bool include_pending = true;
        double view_first = 0;  // visible axis range
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
            bool operator==(const largest_key&) const = default;
        };
        std::vector<size_t> largest;
        std::optional<largest_key> largest_shown;
        std::optional<largest_key> largest_wanted;
        std::future<std::vector<size_t>> largest_job;
        bool selecting_range = false;
        double range_anchor = 0;
    } timeline_;
    void timeline_rebuild(int width);

    // [SECTION] segments state (view_segments.cpp)
    struct segments_state {
        bool color_by_stack = false;
        bool common_scale = false;
    } segments_;

    // [SECTION] flame state (view_flame.cpp)
    enum class flame_source { moment, peak, range };
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
    } flame_;

    // [SECTION] events state (view_events.cpp)
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
    } events_;

    // [SECTION] allocation state (view_allocation.cpp)
    // Blocks live at the moment, largest first, to pick an allocation from.
    struct allocation_list_state {
        bool valid = false;
        size_t device_index = 0;
        size_t position = 0;
        std::vector<snapshot::block> blocks;
    } allocation_list_;

    // [SECTION] stats state (view_stats.cpp)
    struct stats_state {
        bool valid = false;
        size_t device_index = 0;
        size_t position = 0;
        std::string summary;  // memory_summary() at the moment
    } stats_;

    // [SECTION] oom state (view_oom.cpp)
    struct oom_state {
        size_t selected = 0;  // index into dev().oom_entries
        // The moment the selection followed last: a new moment selects its latest OOM.
        size_t followed_moment = static_cast<size_t>(-1);
        bool valid = false;
        size_t device_index = 0;
        size_t shown = 0;  // the selected index the report is for
        analysis::oom_report report;
    } oom_;

    // [SECTION] compare state (view_compare.cpp)
    struct compare_state {
        bool at_peak = false;  // compare the peaks, else the ends
        uint32_t zoom = 0;
        struct key {
            const document* before = nullptr;
            const document* after = nullptr;
            size_t device_index = 0;
            bool at_peak = false;
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
    } compare_;

    // [SECTION] ranks state (view_ranks.cpp)
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
    } ranks_;
    void ranks_rebuild(const std::vector<const device_document*>& devices, int width);
};

}  // namespace memtrail::viewer

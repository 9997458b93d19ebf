#pragma once
// The view of one snapshot: a toolbar, an overview strip, and tabs for the features, each
// feature in a file of its own (view_timeline.cpp, view_segments.cpp, ...). The features are
// linked by one selection: a moment (a position in the device's trace), optionally a range of
// positions and an allocation. A range drives the views: the flame graph shows what it allocated
// and kept, the segments its end with its changes marked, the events its entries, the category
// legend its end and change, and the compare view can set its start against its end.
//
// A view only builds ImGui draw lists; it never touches GL, so a frame can be built and
// measured without a window (headless_frame).

#include <cstddef>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "memtrail/analysis/device_model.hpp"
#include "memtrail/analysis/memory_state.hpp"
#include "memtrail/snapshot/model.hpp"
#include "memtrail/viewer/document.hpp"

namespace memtrail::viewer {

enum class view_kind { timeline, segments, flame, events, allocation, stats, oom, compare, ranks };
inline constexpr int view_kind_count = 9;

std::string_view view_kind_name(view_kind kind);  // "timeline", "segments", ...
bool parse_view_kind(std::string_view name, view_kind& out);

class view {
  public:
    explicit view(std::shared_ptr<const document> doc);
    ~view();
    view(const view&) = delete;
    view& operator=(const view&) = delete;

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
    // What the timeline stacks: "category", "stack", "allocation" or "segment"; false when the
    // text is none of them.
    bool stack_timeline_by(std::string_view name);
    // The Segments view's "fit each row": every row as wide, whatever its segment's size; off
    // (the default), rows are drawn to one scale.
    void fit_segment_rows(bool on);
    // The snapshot the compare view sets against this one (another open view's document).
    void set_comparison(std::shared_ptr<const document> other);
    // Whether the compare view sets the selected range's start against its end (two moments of
    // this trace) instead of another snapshot's end or peak against this one's.
    void compare_range_ends(bool on);
    bool comparing_range_ends() const;
    // The open documents (this one among them): the compare view's baselines, the Ranks view's
    // ranks.
    void set_candidates(std::vector<std::shared_ptr<const document>> documents);
    // The document a click in the Ranks view asked to make the active one, once; else nullptr.
    std::shared_ptr<const document> take_requested_document();

    // --- following a running process (view_live.cpp) ------------------------------------------
    // Takes what the user chose in `earlier`, the view of the previous document of the same
    // process: the feature, device, range, allocation and search; the moment follows the end
    // when it was there, an earlier one stays; a timeline that showed the end grows with it.
    void carry_over(const view& earlier);

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

    // What the features keep between frames (their settings, caches and background jobs), each
    // feature's part owned by its view_<feature>.cpp and declared in its own private header
    // (viewer/src/detail/<feature>_state.hpp), all of them held by panels (detail/view_panels.hpp).
    struct state_cache;
    struct search_cache;
    struct pools_state;
    struct timeline_state;
    struct segments_state;
    enum class flame_source;
    struct flame_state;
    struct events_state;
    struct allocation_state;
    struct stats_state;
    struct oom_state;
    struct compare_state;
    struct ranks_state;
    struct panels;
    std::unique_ptr<panels> panels_;
};

}  // namespace memtrail::viewer

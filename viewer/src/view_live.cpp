// A view of a running process's next document (live_session): what the user chose in the view
// of the previous one carries over, so that following a process feels like one view that grows.

#include <algorithm>

#include "detail/view_panels.hpp"

namespace memtrail::viewer {

void view::carry_over(const view& earlier) {
    kind_ = earlier.kind_;
    kind_changed_ = true;
    const int device = earlier.dev().device;
    for (size_t i = 0; i < doc_->devices.size(); ++i) {
        if (doc_->devices[i].device == device) {
            device_index_ = i;
        }
    }
    // The present, unless the user picked an earlier moment: that one stays inspectable.
    const bool at_end = earlier.moment_ >= earlier.model().event_count();
    moment_ = at_end ? model().event_count() : std::min(earlier.moment_, model().event_count());
    range_ = earlier.range_;
    if (range_) {
        range_->first = std::min(range_->first, model().event_count());
        range_->second = std::min(range_->second, model().event_count());
    }
    // Lifetimes keep their order as the trace grows: the same index is the same allocation.
    allocation_.reset();
    if (earlier.allocation_ && *earlier.allocation_ < model().lifetimes().size()) {
        allocation_ = earlier.allocation_;
    }
    std::copy(std::begin(earlier.search_), std::end(earlier.search_), std::begin(search_));

    const timeline_state& was = earlier.panels_->timeline;
    timeline_state& t = panels_->timeline;
    t.by_time = was.by_time;
    t.include_pending = was.include_pending;
    t.mode = was.mode;
    t.mode_chosen = was.mode_chosen;
    t.stack_layers = was.stack_layers;
    t.band_count = was.band_count;
    // A timeline that showed the end goes on showing it, from where it started: it grows at its
    // right edge. One zoomed into the past stays there.
    if (was.view_set) {
        const bool showed_end = was.view_last >= earlier.axis_end();
        t.view_first = was.view_first;
        t.view_last = showed_end ? axis_end() : std::min(was.view_last, axis_end());
        t.view_set = t.view_last > t.view_first;
    }
    panels_->segments.color_by_stack = earlier.panels_->segments.color_by_stack;
    panels_->segments.fit_each_row = earlier.panels_->segments.fit_each_row;
    panels_->flame.source = earlier.panels_->flame.source;
    panels_->flame.icicle = earlier.panels_->flame.icicle;
    panels_->flame.active = earlier.panels_->flame.active;
}

}  // namespace memtrail::viewer

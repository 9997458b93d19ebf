#pragma once
// What the oom view keeps between frames: its settings, caches and background jobs
// (view_oom.cpp).

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

struct view::oom_state {
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
};

}  // namespace memtrail::viewer

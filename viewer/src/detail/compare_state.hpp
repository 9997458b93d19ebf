#pragma once
// What the compare view keeps between frames: its settings, caches and background jobs
// (view_compare.cpp).

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

struct view::compare_state {
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
};

}  // namespace memtrail::viewer

#pragma once
// The caches every feature shares: the state at the selected moment and which stacks match the
// search text.

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

// The state at the selected moment, rebuilt when the moment or device changes.
struct view::state_cache {
    bool valid = false;
    size_t device_index = 0;
    size_t position = 0;
    analysis::memory_state state;
    analysis::memory_totals totals;
};

// Which stacks match the search text; rebuilt when the text changes.
struct view::search_cache {
    std::string text;
    std::vector<int8_t> stack_match;  // -1 unknown, 0 no, 1 yes
};

}  // namespace memtrail::viewer

#pragma once
// What a view keeps between frames: the caches the features share, and each feature's settings,
// caches and background jobs with the phases it draws in, each in its own header beside this one
// (<feature>_state.hpp). view.hpp holds only a pointer to this; each feature's part is used by its
// own view_<feature>.cpp alone (the timeline's axis setting also by the axis helpers in view.cpp).

#include "allocation_state.hpp"
#include "compare_state.hpp"
#include "events_state.hpp"
#include "flame_state.hpp"
#include "memtrail/viewer/view.hpp"
#include "oom_state.hpp"
#include "pools_state.hpp"
#include "ranks_state.hpp"
#include "segments_state.hpp"
#include "shared_caches.hpp"
#include "stats_state.hpp"
#include "timeline_state.hpp"

namespace memtrail::viewer {

struct view::panels {
    state_cache state;
    search_cache search;
    pools_state pools;
    timeline_state timeline;
    segments_state segments;
    flame_state flame;
    events_state events;
    allocation_state allocation;
    stats_state stats;
    oom_state oom;
    compare_state compare;
    ranks_state ranks;
};

}  // namespace memtrail::viewer

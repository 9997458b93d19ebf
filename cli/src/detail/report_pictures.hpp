#pragma once
// What `memtrail report`'s page draws, reduced in C++ to what a screen can show before it is
// embedded: the timeline cut into columns (per column the min and max of each curve, and the
// categories stacked at the column's highest moment), the segment map at one moment, and the
// flame graph at one moment without the frames too small to draw. So the page's size follows
// the screen, not the trace: a 10M-entry trace embeds as much as a 10k-entry one.

#include <cstddef>
#include <cstdint>

#include "json_writer.hpp"
#include "memtrail/analysis/categories.hpp"
#include "memtrail/analysis/device_model.hpp"
#include "memtrail/analysis/flame.hpp"
#include "memtrail/analysis/memory_state.hpp"

namespace memtrail::cli {

// Columns of the timeline: a few more than a wide screen has pixels.
inline constexpr size_t report_timeline_columns = 2048;
// Flame-graph frames holding less than this share of the total are left out (under a pixel).
inline constexpr double report_flame_smallest_share = 1.0 / 4096;
// A segment of more blocks than this has its runs of blocks in one state merged.
inline constexpr size_t report_segment_blocks_kept = 512;

// The timeline over every position of `model` (the model over every frame, as `categories`
// reads it): "x" (each column's first position), "allocated" and "reserved" as min and max per
// column, and "layers" (each category with bytes, its bytes per column), plus the peak and the
// OOMs' positions.
void write_timeline(json_writer& json, const analysis::device_model& model,
                    const analysis::category_map& categories, size_t peak_position);

// Every segment of `state` to scale: address, size, pool, stream and its blocks as
// [offset, size, state] with state 0 allocated, 1 pending free, 2 free.
void write_segment_map(json_writer& json, const analysis::memory_state& state);

// The graph as parallel arrays (name index, parent, bytes, self bytes), names once each.
void write_flame(json_writer& json, const analysis::flame_graph& graph);

}  // namespace memtrail::cli

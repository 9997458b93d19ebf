#pragma once
// Colours shared by the views, so a state or a stack has the same colour everywhere.

#include <imgui.h>

#include <cstddef>
#include <cstdint>

namespace memtrail::viewer::palette {

inline constexpr ImU32 allocated = IM_COL32(76, 141, 222, 255);
inline constexpr ImU32 pending_free = IM_COL32(230, 160, 60, 255);
inline constexpr ImU32 free_block = IM_COL32(58, 62, 70, 255);
inline constexpr ImU32 rounding_waste = IM_COL32(214, 84, 104, 255);
inline constexpr ImU32 reserved = IM_COL32(150, 150, 160, 255);
inline constexpr ImU32 selection = IM_COL32(255, 235, 90, 255);
inline constexpr ImU32 range = IM_COL32(255, 235, 90, 40);
inline constexpr ImU32 oom = IM_COL32(255, 60, 60, 255);
inline constexpr ImU32 annotation = IM_COL32(120, 200, 140, 90);
inline constexpr ImU32 user_metadata_range = IM_COL32(120, 150, 220, 90);
inline constexpr ImU32 compile_context_range = IM_COL32(220, 150, 90, 90);
inline constexpr ImU32 grid = IM_COL32(255, 255, 255, 24);
inline constexpr ImU32 text_dim = IM_COL32(170, 170, 180, 255);
inline constexpr ImU32 grown = IM_COL32(220, 90, 80, 255);
inline constexpr ImU32 shrunk = IM_COL32(80, 170, 110, 255);

// The colour of a memory category (analysis::memory_category's order): weights and optimizer
// state in cool tones, what a step makes and frees in warm ones, unknown grey.
ImU32 for_category(size_t category);

// A stable, distinguishable colour for a key (a stack id, a frame name hash): hue from the key,
// saturation and value fixed so text stays readable on top.
ImU32 for_key(uint64_t key);

// The colour of a rank of a distributed job: neighbouring ranks get well separated hues.
ImU32 for_rank(int rank);

// `color` made darker (factor < 1) or lighter (> 1), alpha kept.
ImU32 shade(ImU32 color, float factor);

}  // namespace memtrail::viewer::palette

#pragma once
// The rows of the Ranks view's heatmap of many ranks, with no ImGui: one section per job (as
// analysis::analyze_ranks groups the summaries), in each the outliers first, in the order
// `memtrail ranks` explains them (the farthest from the job's median first), then the other
// ranks by rank; and each row's cells, the rank's downsampled allocated curve cut into pixel
// columns over the longest trace, every cell a level of one scale shared by all ranks.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

#include "memtrail/viewer/rank_summaries.hpp"

namespace memtrail::viewer {

// Colour levels of the shared scale: level L holds bytes in (L - 1, L] / (levels - 1) of the
// largest allocated, level 0 nothing allocated.
inline constexpr int heatmap_levels = 64;

struct heatmap_row {
    size_t summary = 0;  // into the set's summaries
    size_t member = 0;   // into the job's members
    int rank = 0;
    double distance = 0.0;          // robust deviations from the job's median
    std::optional<size_t> outlier;  // into the job's outliers, when one
};

struct heatmap_section {
    size_t job = 0;  // into the ranking's jobs
    std::vector<heatmap_row> rows;
};

struct rank_heatmap {
    std::vector<heatmap_section> sections;  // the ranking's jobs, in its order
    uint64_t largest_allocated = 0;         // the scale's top: the most any rank allocated
    size_t longest = 1;                     // the x axis's end: the most positions of any rank
};

rank_heatmap build_rank_heatmap(const rank_summary_set& set);

// Adjacent pixel columns of one level: drawn as one rectangle.
struct heatmap_run {
    uint32_t first_column = 0;
    uint32_t end_column = 0;  // one past the last
    int level = 0;
    bool operator==(const heatmap_run&) const = default;
};

// A rank's row at `columns` pixel columns spanning positions 0 to `longest`: each column the
// level of the most allocated over it; columns past the rank's last position are left out.
std::vector<heatmap_run> heatmap_row_runs(const analysis::rank_summary& summary,
                                          uint64_t largest_allocated, size_t longest,
                                          size_t columns);

// The curve point (bucket) of `summary` holding `position`, or nullopt past its trace.
std::optional<size_t> curve_point_at(const analysis::rank_summary& summary, size_t position);

}  // namespace memtrail::viewer

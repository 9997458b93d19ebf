#pragma once
// The Ranks view of many ranks, from their rank summaries (rank_summaries.hpp): a rank x time
// heatmap of allocated memory, one row per rank on one shared scale, the outliers first with
// `memtrail ranks`'s explanations in a table above, one section per job. Clicking a rank asks
// for its full snapshot (the workspace opens it as a tab and makes it the active one).
//
// Like view, it only builds ImGui draw lists: a frame is built and measured headless.

#include <cstddef>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "memtrail/viewer/rank_heatmap.hpp"
#include "memtrail/viewer/rank_summaries.hpp"

namespace memtrail::viewer {

class rank_summaries_view {
  public:
    explicit rank_summaries_view(std::shared_ptr<const rank_summary_set> set);

    const rank_summary_set& set() const { return *set_; }
    const rank_heatmap& heatmap() const { return heatmap_; }

    // Draws the view into the current ImGui window's remaining space.
    void draw();

    // The snapshot a click on a rank asked to open, once; else "". A rank whose snapshot is not
    // where its summary says asks nothing: the view says so instead (missing_snapshot()).
    std::string take_requested_snapshot();
    const std::string& missing_snapshot() const { return missing_; }
    // Where the last frame drew rank `rank`'s heatmap row of job `job` (its middle, in screen
    // pixels), for a scripted click; nullopt when it was not drawn (scrolled away).
    std::optional<std::pair<float, float>> row_on_screen(size_t job, int rank) const;

  private:
    struct drawn_row {
        size_t job = 0;
        int rank = 0;
        float x = 0;
        float y = 0;
    };
    void draw_section(const heatmap_section& section, float height);
    void draw_outliers(const heatmap_section& section);
    void draw_rows(const heatmap_section& section, float height);
    // `named`: the rank's number is written in the label column.
    void draw_row(const heatmap_section& section, size_t index, float width, float row_height,
                  bool named);
    void row_tooltip(const heatmap_row& row, size_t position) const;
    // Rows of equal cells one under another are drawn as one block: what ranks that did the same
    // cost. Draws the block waiting when the next row differs, and at the end of the rows.
    void queue_block(const std::vector<heatmap_run>& runs, float x0, float y0, float y1);
    void flush_block();
    void draw_legend();
    // Asks for the snapshot of `summary`, rank `rank` of its job, or says it is missing.
    void pick(size_t summary, int rank);
    // Each row's runs of equal colour for a heatmap `columns` pixels wide, made once per width.
    const std::vector<heatmap_run>& runs_of(size_t summary, size_t columns);

    std::shared_ptr<const rank_summary_set> set_;
    rank_heatmap heatmap_;
    std::vector<std::vector<heatmap_run>> runs_;  // per summary, at runs_columns_
    std::vector<bool> runs_made_;                 // made lazily: only rows drawn cost
    size_t runs_columns_ = 0;
    std::vector<drawn_row> drawn_;
    struct block {
        const std::vector<heatmap_run>* runs = nullptr;
        float x0 = 0, y0 = 0, y1 = 0;
    } block_;
    // The hovered row's outline, drawn over the blocks.
    std::optional<std::pair<std::pair<float, float>, std::pair<float, float>>> outline_;
    std::string requested_;
    std::string missing_;
};

}  // namespace memtrail::viewer

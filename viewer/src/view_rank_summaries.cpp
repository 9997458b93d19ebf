// The Ranks view of many ranks (rank_summaries_view.hpp): per job a line of what `memtrail
// ranks` found, a table of the outliers with its explanations, and the heatmap, whose rows are
// drawn as one rectangle per run of equal colour, only for the rows in sight (ImGuiListClipper),
// so a thousand ranks cost what the screen shows.
//
// Index of this file:
// [SECTION] colours and text
// [SECTION] frame
// [SECTION] outliers
// [SECTION] heatmap

#include "memtrail/viewer/rank_summaries_view.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include <imgui.h>

#include "detail/format.hpp"
#include "detail/palette.hpp"
#include "memtrail/analysis/peak_comparison.hpp"

namespace memtrail::viewer {

//-------------------------------------------------------------------------------------------------
// [SECTION] colours and text
//-------------------------------------------------------------------------------------------------

namespace {

constexpr float label_width = 64.0f;
constexpr float least_row_height = 1.0f;
constexpr float most_row_height = 14.0f;
constexpr size_t outlier_rows_shown = 8;
constexpr ImU32 outlier_mark = IM_COL32(255, 80, 80, 255);

// Dark blue through purple and orange to pale yellow (as matplotlib's "inferno"): ordered by
// lightness, so the scale reads in grey too.
ImU32 level_colour(int level) {
    static constexpr float stops[][3] = {{0.00f, 0.00f, 0.02f}, {0.26f, 0.04f, 0.41f},
                                         {0.58f, 0.15f, 0.40f}, {0.87f, 0.32f, 0.23f},
                                         {0.99f, 0.65f, 0.04f}, {0.99f, 1.00f, 0.64f}};
    constexpr int last_stop = static_cast<int>(std::size(stops)) - 1;
    const float t = static_cast<float>(level) / (heatmap_levels - 1) * last_stop;
    const int i = std::min(static_cast<int>(t), last_stop - 1);
    const float f = t - static_cast<float>(i);
    const auto mix = [&](int c) { return stops[i][c] + (stops[i + 1][c] - stops[i][c]) * f; };
    return ImGui::ColorConvertFloat4ToU32(ImVec4(mix(0), mix(1), mix(2), 1.0f));
}

std::string distance_text(double distance) {
    char text[32];
    std::snprintf(text, sizeof text, "%.1f", distance);
    return text;
}

// "dropout (functional.py:1443) <- distributed_job (record_job_traces.py:126)": the innermost
// frame and the first one a fold did not replace.
std::string stack_label(const std::vector<std::string>& frames) {
    if (frames.empty()) {
        return "[no frames]";
    }
    for (size_t i = 1; i < frames.size(); ++i) {
        if (!frames[i].starts_with("... ")) {
            return frames.front() + " <- " + frames[i];
        }
    }
    return frames.front();
}

// What `memtrail ranks` says of a job's sequences: the ranks that did the same, and where the
// first others depart.
std::string sequences_text(const analysis::job_ranking& job) {
    if (job.job.members.size() < 2) {
        return "";
    }
    if (job.sequences.size() == 1) {
        return "every rank did the same: one sequence of allocations (actions and sizes)";
    }
    std::string text;
    for (const analysis::same_sequence& group : job.sequences) {
        if (group.ranks.size() > 1) {
            text += (text.empty() ? "ranks " : "; ranks ") + analysis::rank_ranges(group.ranks) +
                    " did the same";
        }
    }
    if (text.empty()) {
        text = "no two ranks did the same";
    }
    constexpr size_t shown = 3;
    for (size_t d = 0; d < std::min(shown, job.departures.size()); ++d) {
        const analysis::sequence_departure& at = job.departures[d];
        text += "; rank " + std::to_string(at.rank) + " differs from " +
                (at.by_step ? "step " + std::to_string(at.step) + " (entry " +
                                  std::to_string(at.first_entry) + ")"
                            : "entry " + std::to_string(at.first_entry));
    }
    if (job.departures.size() > shown) {
        text += "; " + std::to_string(job.departures.size() - shown) + " more ranks differ";
    }
    return text;
}

std::string outliers_text(const analysis::job_ranking& job) {
    if (job.job.members.size() < 2) {
        return "one rank: nothing to compare it with";
    }
    if (job.outliers.empty()) {
        const size_t farthest = job.by_distance.front();
        return "no outlier: every rank stands within " + distance_text(analysis::outlier_cut) +
               " robust deviations of the median (farthest: rank " +
               std::to_string(job.job.ranks[farthest]) + ", " +
               distance_text(job.standings[farthest].distance) + " on " +
               job.measures[job.standings[farthest].measure].name + ")";
    }
    std::string names;
    for (const analysis::outlier_explanation& e : job.outliers) {
        names += (names.empty() ? "" : ", ") + std::to_string(job.job.ranks[e.member]);
    }
    return std::to_string(job.outliers.size()) +
           (job.outliers.size() == 1 ? " outlier" : " outliers") + " (more than " +
           distance_text(analysis::outlier_cut) + " robust deviations from the median): rank" +
           (job.outliers.size() == 1 ? " " : "s ") + names;
}

}  // namespace

//-------------------------------------------------------------------------------------------------
// [SECTION] frame
//-------------------------------------------------------------------------------------------------

rank_summaries_view::rank_summaries_view(std::shared_ptr<const rank_summary_set> set)
    : set_(std::move(set)), heatmap_(build_rank_heatmap(*set_)) {}

std::string rank_summaries_view::take_requested_snapshot() {
    return std::exchange(requested_, std::string());
}

std::optional<std::pair<float, float>> rank_summaries_view::row_on_screen(size_t job,
                                                                          int rank) const {
    for (const drawn_row& row : drawn_) {
        if (row.job == job && row.rank == rank) {
            return std::pair<float, float>(row.x, row.y);
        }
    }
    return std::nullopt;
}

void rank_summaries_view::pick(size_t summary, int rank) {
    const std::string path = snapshot_of(*set_, summary);
    if (path.empty()) {
        missing_ = "rank " + std::to_string(rank) +
                   "'s snapshot is not there: " + set_->summaries[summary].path +
                   " (as its summary " + set_->files[summary] +
                   " records it); open it with File > Open where it is now";
        return;
    }
    missing_.clear();
    requested_ = path;
}

void rank_summaries_view::draw() {
    drawn_.clear();
    const size_t jobs = heatmap_.sections.size();
    ImGui::Text("%zu %s from rank summaries", set_->summaries.size(),
                set_->summaries.size() == 1 ? "rank" : "ranks");
    if (jobs > 1) {
        ImGui::SameLine();
        ImGui::Text("in %zu jobs", jobs);
    }
    ImGui::SameLine();
    ImGui::TextDisabled(
        "(outliers first; hover a cell for its bytes, click a rank to open its "
        "snapshot)");
    if (!missing_.empty()) {
        ImGui::TextColored(ImGui::ColorConvertU32ToFloat4(outlier_mark), "%s", missing_.c_str());
    }
    if (jobs == 0) {
        ImGui::TextDisabled("No summary could be read.");
        return;
    }
    draw_legend();
    for (size_t s = 0; s < jobs; ++s) {
        // The sections share what is left; the last takes the rest.
        const float room = ImGui::GetContentRegionAvail().y / static_cast<float>(jobs - s);
        ImGui::PushID(static_cast<int>(s));
        draw_section(heatmap_.sections[s], room);
        ImGui::PopID();
    }
}

void rank_summaries_view::draw_legend() {
    // The shared scale: a bar of every level, 0 to the most any rank allocated.
    const float width = std::min(360.0f, ImGui::GetContentRegionAvail().x * 0.4f);
    const float height = ImGui::GetTextLineHeight();
    ImGui::TextUnformatted("allocated: 0");
    ImGui::SameLine();
    const ImVec2 at = ImGui::GetCursorScreenPos();
    ImDrawList* draw = ImGui::GetWindowDrawList();
    for (int level = 0; level < heatmap_levels; ++level) {
        const float x0 = at.x + width * static_cast<float>(level) / heatmap_levels;
        const float x1 = at.x + width * static_cast<float>(level + 1) / heatmap_levels;
        draw->AddRectFilled(ImVec2(x0, at.y + 2), ImVec2(x1, at.y + height), level_colour(level));
    }
    ImGui::Dummy(ImVec2(width, height));
    ImGui::SameLine();
    ImGui::Text("%s (the most any rank allocated); x: trace entries, 0 to %s",
                format_bytes(heatmap_.largest_allocated).c_str(),
                format_count(heatmap_.longest - 1).c_str());
}

void rank_summaries_view::draw_section(const heatmap_section& section, float height) {
    const analysis::job_ranking& job = set_->ranking.jobs[section.job];
    const float top = ImGui::GetCursorPosY();
    if (heatmap_.sections.size() > 1) {
        ImGui::Separator();
        ImGui::Text("job %zu of %zu: %s, %zu ranks", section.job + 1, heatmap_.sections.size(),
                    job.job.name.c_str(), job.job.members.size());
        if (!job.job.why_not_first.empty()) {
            ImGui::TextDisabled("not of job 1: %s", job.job.why_not_first.c_str());
        }
    }
    ImGui::TextUnformatted(outliers_text(job).c_str());
    const std::string sequences = sequences_text(job);
    if (!sequences.empty()) {
        ImGui::TextDisabled("%s", sequences.c_str());
    }
    draw_outliers(section);
    draw_rows(section, std::max(60.0f, height - (ImGui::GetCursorPosY() - top)));
}

//-------------------------------------------------------------------------------------------------
// [SECTION] outliers
//-------------------------------------------------------------------------------------------------

void rank_summaries_view::draw_outliers(const heatmap_section& section) {
    const analysis::job_ranking& job = set_->ranking.jobs[section.job];
    if (job.outliers.empty()) {
        return;
    }
    const float line = ImGui::GetTextLineHeight() + 2 * ImGui::GetStyle().CellPadding.y;
    const float table_height =
        line * static_cast<float>(std::min(outlier_rows_shown, job.outliers.size()) + 1) + 4;
    const ImGuiTableFlags flags = ImGuiTableFlags_SizingFixedFit | ImGuiTableFlags_RowBg |
                                  ImGuiTableFlags_BordersInnerV | ImGuiTableFlags_ScrollY;
    if (!ImGui::BeginTable("##outliers", 5, flags, ImVec2(0, table_height))) {
        return;
    }
    ImGui::TableSetupScrollFreeze(0, 1);
    for (const char* name : {"rank", "distance", "on", "against", "why (each at its own peak)"}) {
        ImGui::TableSetupColumn(name);
    }
    ImGui::TableHeadersRow();
    ImGuiListClipper clipper;
    clipper.Begin(static_cast<int>(job.outliers.size()));
    while (clipper.Step()) {
        for (int i = clipper.DisplayStart; i < clipper.DisplayEnd; ++i) {
            const analysis::outlier_explanation& e = job.outliers[static_cast<size_t>(i)];
            const analysis::rank_standing& standing = job.standings[e.member];
            ImGui::TableNextRow();
            ImGui::TableNextColumn();
            char label[32];
            std::snprintf(label, sizeof label, "%d##outlier%d", job.job.ranks[e.member], i);
            if (ImGui::Selectable(label, false, ImGuiSelectableFlags_SpanAllColumns)) {
                pick(job.job.members[e.member], job.job.ranks[e.member]);
            }
            if (ImGui::IsItemHovered()) {
                ImGui::BeginTooltip();
                ImGui::TextUnformatted(set_->files[job.job.members[e.member]].c_str());
                ImGui::TextUnformatted("stacks whose bytes changed most:");
                for (const analysis::stack_difference& s : e.stacks) {
                    ImGui::Text("%s %s in %s: %s", format_bytes_delta(s.change()).c_str(),
                                std::string(analysis::category_name(s.category)).c_str(),
                                stack_label(s.frames).c_str(),
                                (format_bytes(s.median_bytes) + " -> " + format_bytes(s.rank_bytes))
                                    .c_str());
                }
                ImGui::EndTooltip();
            }
            ImGui::TableNextColumn();
            ImGui::TextUnformatted(distance_text(standing.distance).c_str());
            ImGui::TableNextColumn();
            ImGui::TextUnformatted(job.measures[standing.measure].name.c_str());
            ImGui::TableNextColumn();
            ImGui::Text("rank %d", job.job.ranks[e.median_member]);
            ImGui::TableNextColumn();
            std::string why = e.categories_text;
            if (!e.stacks.empty()) {
                const analysis::stack_difference& s = e.stacks.front();
                why += "; most in " + stack_label(s.frames) + " " + format_bytes_delta(s.change());
            }
            ImGui::TextUnformatted(why.c_str());
        }
    }
    ImGui::EndTable();
}

//-------------------------------------------------------------------------------------------------
// [SECTION] heatmap
//-------------------------------------------------------------------------------------------------

const std::vector<heatmap_run>& rank_summaries_view::runs_of(size_t summary, size_t columns) {
    if (columns != runs_columns_) {
        runs_.assign(set_->summaries.size(), {});
        runs_made_.assign(set_->summaries.size(), false);
        runs_columns_ = columns;
    }
    if (!runs_made_[summary]) {
        runs_[summary] = heatmap_row_runs(set_->summaries[summary], heatmap_.largest_allocated,
                                          heatmap_.longest, columns);
        runs_made_[summary] = true;
    }
    return runs_[summary];
}

void rank_summaries_view::draw_rows(const heatmap_section& section, float height) {
    // The outliers (first) in rows tall enough to name them, a line, then the other ranks as
    // thin as fits, at least one pixel; only the rows in sight are drawn.
    const auto outliers = static_cast<size_t>(std::count_if(
        section.rows.begin(), section.rows.end(), [](const heatmap_row& r) { return r.outlier; }));
    const float line = ImGui::GetTextLineHeight();
    const float rest_height = height - line * static_cast<float>(outliers) - 4;
    const float row_height =
        std::clamp(std::floor(rest_height / static_cast<float>(section.rows.size() - outliers)),
                   least_row_height, most_row_height);
    ImGui::PushStyleVar(ImGuiStyleVar_ItemSpacing, ImVec2(ImGui::GetStyle().ItemSpacing.x, 0));
    if (ImGui::BeginChild("##heatmap", ImVec2(0, height), false)) {
        const float width = std::max(32.0f, ImGui::GetContentRegionAvail().x - label_width);
        const auto draw_range = [&](size_t first, size_t end, float row) {
            // Thin rows are named every few rows, as an axis is ticked.
            const auto every = static_cast<int>(std::ceil(line * 1.5f / row));
            ImGuiListClipper clipper;
            clipper.Begin(static_cast<int>(end - first), row);
            while (clipper.Step()) {
                for (int i = clipper.DisplayStart; i < clipper.DisplayEnd; ++i) {
                    draw_row(section, first + static_cast<size_t>(i), width, row,
                             row >= line || i % every == 0);
                }
                flush_block();
            }
        };
        draw_range(0, outliers, line);
        if (outliers > 0 && outliers < section.rows.size()) {
            const ImVec2 at = ImGui::GetCursorScreenPos();
            ImGui::GetWindowDrawList()->AddLine(ImVec2(at.x, at.y + 2),
                                                ImVec2(at.x + label_width + width, at.y + 2),
                                                palette::text_dim);
            ImGui::Dummy(ImVec2(label_width + width, 4));
        }
        draw_range(outliers, section.rows.size(), row_height);
        if (outline_) {
            ImGui::GetWindowDrawList()->AddRect(
                ImVec2(outline_->first.first, outline_->first.second),
                ImVec2(outline_->second.first, outline_->second.second),
                IM_COL32(255, 255, 255, 160));
            outline_.reset();
        }
    }
    ImGui::EndChild();
    ImGui::PopStyleVar();
}

void rank_summaries_view::draw_row(const heatmap_section& section, size_t index, float width,
                                   float row_height, bool named) {
    const heatmap_row& row = section.rows[index];
    ImDrawList* draw = ImGui::GetWindowDrawList();
    const ImVec2 at = ImGui::GetCursorScreenPos();
    const float x0 = at.x + label_width;
    if (row.outlier) {
        draw->AddRectFilled(ImVec2(at.x, at.y), ImVec2(at.x + 4, at.y + row_height), outlier_mark);
    }
    if (named) {
        char text[32];
        std::snprintf(text, sizeof text, "%d", row.rank);
        draw->AddText(ImVec2(at.x + 8, at.y), row.outlier ? outlier_mark : palette::text_dim, text);
    }
    queue_block(runs_of(row.summary, static_cast<size_t>(width)), x0, at.y, at.y + row_height);
    drawn_.push_back({section.job, row.rank, x0 + width / 2, at.y + row_height / 2});
    ImGui::PushID(static_cast<int>(index));
    ImGui::InvisibleButton("##row", ImVec2(label_width + width, row_height));
    ImGui::PopID();
    if (ImGui::IsItemClicked()) {
        pick(row.summary, row.rank);
    }
    if (ImGui::IsItemHovered()) {
        outline_ = {{at.x, at.y}, {x0 + width, at.y + row_height}};
        const float x = std::max(0.0f, ImGui::GetIO().MousePos.x - x0) / width;
        row_tooltip(row, static_cast<size_t>(x * static_cast<float>(heatmap_.longest)));
    }
}

void rank_summaries_view::queue_block(const std::vector<heatmap_run>& runs, float x0, float y0,
                                      float y1) {
    if (block_.runs != nullptr && block_.x0 == x0 && block_.y1 == y0 && *block_.runs == runs) {
        block_.y1 = y1;
        return;
    }
    flush_block();
    block_ = {&runs, x0, y0, y1};
}

void rank_summaries_view::flush_block() {
    if (block_.runs == nullptr) {
        return;
    }
    // One rectangle per run of equal colour, as tall as the rows alike.
    ImDrawList* draw = ImGui::GetWindowDrawList();
    for (const heatmap_run& run : *block_.runs) {
        draw->AddRectFilled(ImVec2(block_.x0 + static_cast<float>(run.first_column), block_.y0),
                            ImVec2(block_.x0 + static_cast<float>(run.end_column), block_.y1),
                            level_colour(run.level));
    }
    block_ = {};
}

void rank_summaries_view::row_tooltip(const heatmap_row& row, size_t position) const {
    const analysis::rank_summary& s = set_->summaries[row.summary];
    ImGui::BeginTooltip();
    ImGui::Text("rank %d (%s)%s", row.rank, s.path.c_str(), row.outlier ? ", an outlier" : "");
    ImGui::Text("%s robust deviations from the median; peak allocated %s at %s",
                distance_text(row.distance).c_str(), format_bytes(s.peak_allocated.bytes).c_str(),
                position_label(s.peak_allocated.position).c_str());
    if (const auto b = curve_point_at(s, position)) {
        const size_t last = *b + 1 < s.curve.size() ? s.curve[*b + 1].position - 1 : s.entries;
        ImGui::Text("positions %s to %s: allocated up to %s, reserved up to %s",
                    format_count(s.curve[*b].position).c_str(), format_count(last).c_str(),
                    format_bytes(s.curve[*b].allocated).c_str(),
                    format_bytes(s.curve[*b].reserved).c_str());
    } else {
        ImGui::TextDisabled("position %s: past this rank's trace (%s entries)",
                            format_count(position).c_str(), format_count(s.entries).c_str());
    }
    ImGui::TextDisabled("click to open its snapshot");
    ImGui::EndTooltip();
}

}  // namespace memtrail::viewer

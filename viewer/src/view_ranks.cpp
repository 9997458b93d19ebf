// Ranks: the open snapshots that are ranks of this snapshot's distributed job, one file per rank
// (analysis::group_into_jobs tells the others apart; a note names them and why). A table of each
// rank's peaks and when, its end and its trace's counts (what `memtrail ranks` prints), the
// categories that make the highest rank peak higher than the median rank, and the ranks' memory
// curves in one plot, one colour per rank. Clicking a rank makes its snapshot the active tab, so
// the other views show that rank.
//
// Index of this file:
// [SECTION] cells
// [SECTION] curves
// [SECTION] table
// [SECTION] plot

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "detail/format.hpp"
#include "detail/palette.hpp"
#include "detail/view_panels.hpp"
#include "memtrail/analysis/peak_comparison.hpp"
#include "memtrail/analysis/timeline.hpp"
#include "memtrail/viewer/rank_table.hpp"

namespace memtrail::viewer {

//-------------------------------------------------------------------------------------------------
// [SECTION] cells
//-------------------------------------------------------------------------------------------------

namespace {

constexpr int column_count = 12;
constexpr float axis_height = 18.0f;

// "entry 1233, +1.25 s": the position as the CLI names it, and the time since the rank's first
// entry when it has times.
std::string when(const analysis::rank_overview& o, const analysis::curve_peak& peak) {
    std::string text = position_label(peak.position);
    if (o.entries > 0 && o.first_time_ns != 0) {
        text += ", +" + format_duration(peak.time_ns - o.first_time_ns);
    }
    return text;
}

void cell(const std::string& text) {
    ImGui::TableNextColumn();
    ImGui::TextUnformatted(text.c_str());
}

// A square of the rank's colour, as tall as a line of text.
void swatch(int rank) {
    const float side = ImGui::GetTextLineHeight();
    const ImVec2 at = ImGui::GetCursorScreenPos();
    ImGui::GetWindowDrawList()->AddRectFilled(
        ImVec2(at.x, at.y + 2), ImVec2(at.x + side - 4, at.y + side - 2), palette::for_rank(rank));
    ImGui::Dummy(ImVec2(side - 2, side));
    ImGui::SameLine();
}

// "rank 1 against rank 0 (the median rank: ...), each at its own peak allocated: activation
// +852.88MiB, ...; optimizer_state and input equal", as `memtrail ranks` explains it; "" with
// one rank, or while a rank's categories are still being worked out.
std::string why_highest(const std::vector<rank_row>& rows, size_t highest) {
    std::vector<uint64_t> reserved;
    for (const rank_row& row : rows) {
        reserved.push_back(row.device->overview.peak_reserved.bytes);
    }
    const size_t median = analysis::median_rank(reserved, highest);
    if (median == highest) {
        return "";
    }
    std::vector<analysis::category_breakdown> breakdowns;
    for (const size_t i : {median, highest}) {
        const device_document& d = *rows[i].device;
        if (!d.categories) {
            return "";
        }
        breakdowns.push_back(analysis::categories_at(
            d.model, *d.categories, d.model.peak_position(analysis::series::allocated)));
    }
    return "rank " + std::to_string(rows[highest].rank) + " against rank " +
           std::to_string(rows[median].rank) + " (" + analysis::median_rank_meaning(rows.size()) +
           "), each at its own peak allocated: " +
           analysis::category_changes_text(analysis::compare_categories(breakdowns), 0, 1);
}

// The trace's extent on the plot's x axis: positions, or nanoseconds since its first entry.
double extent_of(const analysis::device_model& model, bool by_time) {
    return by_time ? static_cast<double>(model.time_at(model.event_count()) - model.time_at(0))
                   : static_cast<double>(model.event_count() + 1);
}

}  // namespace

//-------------------------------------------------------------------------------------------------
// [SECTION] curves
//-------------------------------------------------------------------------------------------------

void view::ranks_state::rebuild(const std::vector<const device_document*>& devices, int width) {
    // The longest trace spans the plot and the others their share of it, so one scale holds
    // for all ranks.
    double longest = 1;
    for (const device_document* d : devices) {
        longest = std::max(longest, extent_of(d->model, by_time));
    }
    per_row.clear();
    y_max = 1;
    for (const device_document* d : devices) {
        const analysis::device_model& m = d->model;
        const double extent = extent_of(m, by_time);
        curves c;
        c.width = std::max(1.0f, static_cast<float>(width * extent / longest));
        const auto columns = static_cast<size_t>(std::ceil(c.width));
        for (const auto s : {analysis::series::allocated, analysis::series::reserved}) {
            auto buckets =
                by_time ? analysis::buckets_by_time(m, s, m.time_at(0),
                                                    m.time_at(0) + static_cast<int64_t>(extent) + 1,
                                                    columns)
                        : analysis::buckets_by_position(m, s, 0, m.event_count() + 1, columns);
            (s == analysis::series::allocated ? c.allocated : c.reserved) = std::move(buckets);
        }
        y_max = std::max(y_max, d->overview.peak_reserved.bytes);
        per_row.push_back(std::move(c));
    }
    cached = key{devices, width, by_time};
}

void view::draw_ranks() {
    ranks_state& r = panels_->ranks;
    const job_documents job = documents_of_job(doc_, candidates_);
    const std::vector<rank_row> rows = rank_rows(job.ranks);

    ImGui::AlignTextToFramePadding();
    ImGui::Text("%zu %s", rows.size(), rows.size() == 1 ? "rank" : "ranks");
    ImGui::SameLine();
    ImGui::TextDisabled("(one snapshot per rank; click a rank to show it in the other tabs)");
    ImGui::SameLine();
    int by_time = r.by_time ? 1 : 0;
    ImGui::RadioButton("x: event index", &by_time, 0);
    ImGui::SameLine();
    ImGui::RadioButton("x: time since each rank's start", &by_time, 1);
    r.by_time = by_time == 1;
    ImGui::SameLine();
    ImGui::Checkbox("reserved", &r.show_reserved);
    if (!job.others.empty()) {
        ImGui::TextDisabled(
            "%zu other open %s not of this job, so not among its ranks (hover for why)",
            job.others.size(), job.others.size() == 1 ? "snapshot is" : "snapshots are");
        if (ImGui::IsItemHovered()) {
            ImGui::BeginTooltip();
            for (const auto& [other, reason] : job.others) {
                ImGui::Text("%s: %s", other->name.c_str(), reason.c_str());
            }
            ImGui::EndTooltip();
        }
    }
    r.draw_table(*this, rows);
    r.draw_plot(*this, rows);
    r.draw_legend(*this, rows);
}

//-------------------------------------------------------------------------------------------------
// [SECTION] table
//-------------------------------------------------------------------------------------------------

void view::ranks_state::draw_table(view& v, const std::vector<rank_row>& rows) {
    // Header, ranks and totals; past 40% of the height the table scrolls.
    const float line = ImGui::GetTextLineHeight() + 2 * ImGui::GetStyle().CellPadding.y;
    const float table_height =
        std::min(ImGui::GetContentRegionAvail().y * 0.4f,
                 line * static_cast<float>(rows.size() + (rows.size() > 1 ? 2 : 1)) + 4);
    const ImGuiTableFlags flags = ImGuiTableFlags_SizingFixedFit | ImGuiTableFlags_RowBg |
                                  ImGuiTableFlags_BordersInnerV | ImGuiTableFlags_ScrollY;
    if (ImGui::BeginTable("##ranks", column_count, flags, ImVec2(0, table_height))) {
        ImGui::TableSetupScrollFreeze(0, 1);
        for (const char* name :
             {"rank", "file", "device", "peak allocated", "when", "peak reserved", "when",
              "end allocated", "end reserved", "allocs", "segment allocs", "OOMs"}) {
            ImGui::TableSetupColumn(name);
        }
        ImGui::TableHeadersRow();
        ImGuiListClipper clipper;
        clipper.Begin(static_cast<int>(rows.size()));
        while (clipper.Step()) {
            for (int i = clipper.DisplayStart; i < clipper.DisplayEnd; ++i) {
                const rank_row& row = rows[static_cast<size_t>(i)];
                const analysis::rank_overview& o = row.device->overview;
                ImGui::TableNextRow();
                ImGui::TableNextColumn();
                swatch(row.rank);
                char label[32];
                std::snprintf(label, sizeof label, "%d##rank%d", row.rank, i);
                if (ImGui::Selectable(label, row.doc == v.doc_,
                                      ImGuiSelectableFlags_SpanAllColumns) &&
                    row.doc != v.doc_) {
                    v.requested_document_ = row.doc;
                }
                if (ImGui::IsItemHovered()) {
                    ImGui::SetTooltip("%s", row.doc->path.empty() ? row.doc->name.c_str()
                                                                  : row.doc->path.c_str());
                }
                cell(row.doc->name);
                cell("cuda:" + analysis::devices_text(o));
                cell(format_bytes(o.peak_allocated.bytes));
                cell(when(o, o.peak_allocated));
                cell(format_bytes(o.peak_reserved.bytes));
                cell(when(o, o.peak_reserved));
                cell(format_bytes(o.end_allocated));
                cell(format_bytes(o.end_reserved));
                cell(format_count(static_cast<uint64_t>(o.allocations)));
                cell(format_count(static_cast<uint64_t>(o.device_allocations)));
                cell(format_count(static_cast<uint64_t>(o.ooms)));
            }
        }
        if (rows.size() > 1) {
            analysis::rank_totals sum;
            for (const rank_row& row : rows) {
                analysis::add_to(sum, row.device->overview);
            }
            ImGui::TableNextRow();
            ImGui::TableNextColumn();
            ImGui::TextDisabled("total");
            cell("");
            cell("");
            cell(format_bytes(sum.peak_allocated));
            cell("");
            cell(format_bytes(sum.peak_reserved));
            cell("");
            cell(format_bytes(sum.end_allocated));
            cell(format_bytes(sum.end_reserved));
            cell(format_count(static_cast<uint64_t>(sum.allocations)));
            cell(format_count(static_cast<uint64_t>(sum.device_allocations)));
            cell(format_count(static_cast<uint64_t>(sum.ooms)));
        }
        ImGui::EndTable();
    }
    const size_t highest = highest_reserved_peak(rows);
    const rank_row& best = rows[highest];
    ImGui::TextColored(ImGui::ColorConvertU32ToFloat4(palette::text_dim),
                       "rank %d (%s) peaks highest: %s reserved at %s", best.rank,
                       best.doc->name.c_str(),
                       format_bytes(best.device->overview.peak_reserved.bytes).c_str(),
                       when(best.device->overview, best.device->overview.peak_reserved).c_str());
    const std::string why = why_highest(rows, highest);
    if (!why.empty()) {
        ImGui::TextColored(ImGui::ColorConvertU32ToFloat4(palette::text_dim), "%s", why.c_str());
    }
}

//-------------------------------------------------------------------------------------------------
// [SECTION] plot
//-------------------------------------------------------------------------------------------------

void view::ranks_state::draw_plot(const view& v, const std::vector<rank_row>& rows) {
    const float legend_height = ImGui::GetFrameHeightWithSpacing();
    const ImVec2 origin = ImGui::GetCursorScreenPos();
    const float width = std::max(64.0f, ImGui::GetContentRegionAvail().x);
    const float plot_height =
        std::max(80.0f, ImGui::GetContentRegionAvail().y - axis_height - legend_height);
    std::vector<const device_document*> devices;
    for (const rank_row& row : rows) {
        devices.push_back(row.device);
    }
    const key want{devices, static_cast<int>(width), by_time};
    if (cached != want) {
        rebuild(devices, static_cast<int>(width));
    }

    ImDrawList* draw = ImGui::GetWindowDrawList();
    const ImVec2 plot_end(origin.x + width, origin.y + plot_height);
    draw->AddRectFilled(origin, plot_end, IM_COL32(24, 26, 31, 255));
    draw->PushClipRect(origin, ImVec2(plot_end.x, plot_end.y + axis_height), true);
    const auto scale_max = static_cast<double>(y_max);
    auto y_of = [&](uint64_t bytes) {
        return plot_end.y -
               static_cast<float>(static_cast<double>(bytes) / scale_max) * (plot_height - 4);
    };
    const double y_step = nice_step(scale_max / 5, 1024);
    for (double at = y_step; at < scale_max; at += y_step) {
        const float y = y_of(static_cast<uint64_t>(at));
        draw->AddLine(ImVec2(origin.x, y), ImVec2(plot_end.x, y), palette::grid);
        draw->AddText(ImVec2(origin.x + 4, y - ImGui::GetTextLineHeight()), palette::text_dim,
                      format_bytes(static_cast<uint64_t>(at)).c_str());
    }

    // Each bucket is a column of pixels: a bar from its least to its most bytes, and a step line
    // through the most, so a jump between columns stays joined.
    auto curve = [&](const std::vector<analysis::curve_bucket>& buckets, float rank_width,
                     ImU32 color, float thickness) {
        std::vector<ImVec2> steps;
        steps.reserve(buckets.size() * 2);
        const auto n = static_cast<float>(buckets.size());
        for (size_t b = 0; b < buckets.size(); ++b) {
            const float x0 = origin.x + rank_width * static_cast<float>(b) / n;
            const float x1 = origin.x + rank_width * static_cast<float>(b + 1) / n;
            const float top = y_of(buckets[b].max);
            const float bottom = y_of(buckets[b].min);
            if (bottom - top > 1) {
                draw->AddRectFilled(ImVec2(x0, top), ImVec2(std::max(x1, x0 + 1), bottom), color);
            }
            steps.emplace_back(x0, top);
            steps.emplace_back(x1, top);
        }
        draw->AddPolyline(steps.data(), static_cast<int>(steps.size()), color, ImDrawFlags_None,
                          thickness);
    };
    for (size_t i = 0; i < rows.size(); ++i) {
        const ImU32 color = palette::for_rank(rows[i].rank);
        if (show_reserved) {
            curve(per_row[i].reserved, per_row[i].width, (color & 0x00ffffffu) | 0x70000000u, 1.0f);
        }
        curve(per_row[i].allocated, per_row[i].width, color, rows[i].doc == v.doc_ ? 2.5f : 1.5f);
    }

    // The x axis: positions, or time since each rank's start, over the longest trace.
    double longest = 1;
    for (const rank_row& row : rows) {
        longest = std::max(longest, extent_of(row.device->model, by_time));
    }
    auto axis_text = [&](double a) {
        return by_time ? "+" + format_duration(static_cast<int64_t>(a))
                       : position_label(static_cast<size_t>(a));
    };
    const double x_step = nice_step(longest / 8, 10);
    // On the index axis position N + 1 is "entry N": ticks there give round entry numbers.
    for (double a = by_time ? 0.0 : 1.0; a < longest; a += x_step) {
        const float x = origin.x + static_cast<float>(a / longest) * width;
        draw->AddLine(ImVec2(x, plot_end.y), ImVec2(x, plot_end.y + 4), palette::text_dim);
        draw->AddText(ImVec2(x + 2, plot_end.y + 2), palette::text_dim, axis_text(a).c_str());
    }
    draw->PopClipRect();

    const ImGuiIO& io = ImGui::GetIO();
    ImGui::InvisibleButton("##rank_plot", ImVec2(width, plot_height + axis_height));
    if (ImGui::IsItemHovered()) {
        const double axis =
            std::max(0.0, static_cast<double>(io.MousePos.x - origin.x) / width * longest);
        draw->AddLine(ImVec2(io.MousePos.x, origin.y), ImVec2(io.MousePos.x, plot_end.y),
                      IM_COL32(255, 255, 255, 70));
        ImGui::BeginTooltip();
        ImGui::Text("%s", axis_text(axis).c_str());
        for (const rank_row& row : rows) {
            const analysis::device_model& m = row.device->model;
            ImGui::TextColored(ImGui::ColorConvertU32ToFloat4(palette::for_rank(row.rank)),
                               "rank %d", row.rank);
            ImGui::SameLine();
            if (axis >= extent_of(m, by_time)) {
                ImGui::TextDisabled("ended");
                continue;
            }
            const size_t p = by_time ? m.position_at_time(m.time_at(0) + static_cast<int64_t>(axis))
                                     : static_cast<size_t>(axis);
            ImGui::Text("allocated %s, reserved %s (#%s)",
                        format_bytes(m.values(analysis::series::allocated)[p]).c_str(),
                        format_bytes(m.values(analysis::series::reserved)[p]).c_str(),
                        format_count(p).c_str());
        }
        ImGui::EndTooltip();
    }
}

void view::ranks_state::draw_legend(view& v, const std::vector<rank_row>& rows) {
    // The legend doubles as a rank picker.
    for (const rank_row& row : rows) {
        swatch(row.rank);
        char label[300];
        std::snprintf(label, sizeof label, "rank %d: %s##legend%d", row.rank, row.doc->name.c_str(),
                      row.rank);
        const ImVec2 size = ImGui::CalcTextSize(label, nullptr, true);
        if (ImGui::Selectable(label, row.doc == v.doc_, ImGuiSelectableFlags_None, size) &&
            row.doc != v.doc_) {
            v.requested_document_ = row.doc;
        }
        ImGui::SameLine(0, 16);
    }
    ImGui::NewLine();
}

}  // namespace memtrail::viewer

// Compare: this snapshot against a baseline (another open snapshot), side by side at their ends
// or their peaks, or two moments of this trace (the selected range's start and end); and a
// differential flame graph: a frame's width is its bytes in both, its colour says whether it
// grew (red) or shrank (green).

#include <algorithm>
#include <chrono>
#include <cmath>
#include <functional>
#include <future>

#include "detail/flame_canvas.hpp"
#include "detail/format.hpp"
#include "detail/palette.hpp"
#include "detail/view_panels.hpp"

namespace memtrail::viewer {

namespace {

// The model of `device` in `doc`, or its first device when it has no such one.
const analysis::device_model& model_for(const document& doc, int device) {
    for (const device_document& d : doc.devices) {
        if (d.device == device) {
            return d.model;
        }
    }
    return doc.devices.front().model;
}

ImU32 delta_color(int64_t delta, uint64_t before, uint64_t after) {
    const uint64_t larger = std::max(before, after);
    if (delta == 0 || larger == 0) {
        return IM_COL32(120, 124, 135, 255);
    }
    const float amount = 0.35f + 0.65f * static_cast<float>(std::abs(static_cast<double>(delta)) /
                                                            static_cast<double>(larger));
    const ImVec4 base =
        ImGui::ColorConvertU32ToFloat4(delta > 0 ? palette::grown : palette::shrunk);
    const ImVec4 gray(0.47f, 0.49f, 0.53f, 1.0f);
    return ImGui::ColorConvertFloat4ToU32(ImVec4(gray.x + (base.x - gray.x) * amount,
                                                 gray.y + (base.y - gray.y) * amount,
                                                 gray.z + (base.z - gray.z) * amount, 1.0f));
}

void totals_row(const char* name, uint64_t before, uint64_t after) {
    ImGui::TableNextRow();
    ImGui::TableNextColumn();
    ImGui::TextDisabled("%s", name);
    ImGui::TableNextColumn();
    ImGui::TextUnformatted(format_bytes(before).c_str());
    ImGui::TableNextColumn();
    ImGui::TextUnformatted(format_bytes(after).c_str());
    ImGui::TableNextColumn();
    const int64_t delta = static_cast<int64_t>(after) - static_cast<int64_t>(before);
    ImGui::TextColored(ImGui::ColorConvertU32ToFloat4(delta > 0   ? palette::grown
                                                      : delta < 0 ? palette::shrunk
                                                                  : palette::text_dim),
                       "%s", format_bytes_delta(delta).c_str());
}

}  // namespace

void view::draw_compare() {
    compare_state& c = panels_->compare;
    ImGui::AlignTextToFramePadding();
    ImGui::TextUnformatted("baseline:");
    ImGui::SameLine();
    ImGui::SetNextItemWidth(320);
    const char* this_trace = "this trace at the range's start";
    if (ImGui::BeginCombo("##baseline", c.range_ends   ? this_trace
                                        : compare_doc_ ? compare_doc_->name.c_str()
                                                       : "(none)")) {
        if (ImGui::Selectable(this_trace, c.range_ends)) {
            compare_range_ends(true);
        }
        for (const auto& candidate : candidates_) {
            if (candidate != doc_ &&
                ImGui::Selectable(candidate->name.c_str(),
                                  !c.range_ends && candidate == compare_doc_)) {
                set_comparison(candidate);
                compare_range_ends(false);
            }
        }
        ImGui::EndCombo();
    }
    ImGui::SameLine();
    if (!c.range_ends) {
        int at_peak = c.at_peak ? 1 : 0;
        ImGui::RadioButton("at the ends", &at_peak, 0);
        ImGui::SameLine();
        ImGui::RadioButton("at the peaks", &at_peak, 1);
        c.at_peak = at_peak == 1;
        ImGui::SameLine();
    }
    if (ImGui::SmallButton("reset zoom")) {
        c.zoom = 0;
    }
    compare_state::key want{compare_doc_.get(), doc_.get(), device_index_, c.at_peak, {}};
    std::string before_name = compare_doc_ ? compare_doc_->name : "";
    std::string after_name = doc_->name;
    if (c.range_ends) {
        if (!range_) {
            ImGui::TextDisabled(
                "Select a range on the timeline (shift or right drag) to compare its start with "
                "its end.");
            return;
        }
        const size_t count = model().event_count();
        want = {doc_.get(), doc_.get(), device_index_, false,
                std::pair(std::min(range_->first, count), std::min(range_->second, count))};
        before_name = "at " + position_label(want.moments->first);
        after_name = "at " + position_label(want.moments->second);
    } else if (!compare_doc_) {
        ImGui::TextDisabled(
            "Open a second snapshot (or pass FILE2 on the command line) and pick it as the "
            "baseline, or pick \"%s\" with a range selected.",
            this_trace);
        return;
    }

    c.update(*this, want);
    if (c.diff.nodes.empty()) {
        ImGui::TextDisabled("comparing...");
        return;
    }

    const ImGuiTableFlags flags =
        ImGuiTableFlags_SizingFixedFit | ImGuiTableFlags_RowBg | ImGuiTableFlags_BordersInnerV;
    if (ImGui::BeginTable("##totals", 4, flags)) {
        // Widths from the texts: the table appears only once the comparison is ready, and
        // fitting its columns to their first frames' contents left them collapsed.
        const float number = ImGui::CalcTextSize("-1023.99MiB").x + 12;
        auto fixed = [&](const char* label, float at_least) {
            ImGui::TableSetupColumn(label, ImGuiTableColumnFlags_WidthFixed,
                                    std::max(at_least, ImGui::CalcTextSize(label).x + 12));
        };
        fixed("", ImGui::CalcTextSize("largest free block").x + 12);
        fixed(before_name.c_str(), number);
        fixed(after_name.c_str(), number);
        fixed("change", number);
        ImGui::TableHeadersRow();
        const analysis::memory_totals& b = c.before_totals;
        const analysis::memory_totals& a = c.after_totals;
        totals_row("reserved", b.reserved, a.reserved);
        totals_row("allocated", b.allocated, a.allocated);
        totals_row("pending free", b.pending_free, a.pending_free);
        totals_row("free in segments", b.free, a.free);
        totals_row("rounding waste", b.rounding_waste, a.rounding_waste);
        totals_row("largest free block", b.largest_free, a.largest_free);
        ImGui::EndTable();
    }
    if (c.pending.valid() || c.shown_key != want) {
        ImGui::TextDisabled("(updating...)");
    } else {
        ImGui::TextDisabled("width: bytes in both; red grew, green shrank; click: zoom");
    }

    const auto& nodes = c.diff.nodes;
    const flame_canvas_result r = draw_flame_canvas(
        "##diff", nodes, c.zoom, c.max_depth, false,
        [&](uint32_t i) { return nodes[i].before + nodes[i].after; },
        [&](uint32_t i) { return delta_color(nodes[i].delta(), nodes[i].before, nodes[i].after); });
    if (r.hovered) {
        const analysis::flame_diff_node& n = nodes[*r.hovered];
        ImGui::BeginTooltip();
        ImGui::TextUnformatted(n.name.c_str());
        ImGui::Separator();
        ImGui::Text("baseline %s", format_bytes(n.before).c_str());
        ImGui::Text("this     %s", format_bytes(n.after).c_str());
        ImGui::Text("change   %s", format_bytes_delta(n.delta()).c_str());
        ImGui::EndTooltip();
    }
    if (r.clicked) {
        c.zoom = *r.clicked;
    }
}

void view::compare_state::update(const view& v, const key& want) {
    if (pending.valid() && pending.wait_for(std::chrono::seconds(0)) == std::future_status::ready) {
        result r = pending.get();
        diff = std::move(r.diff);
        before_totals = r.before_totals;
        after_totals = r.after_totals;
        shown_key = pending_key;
        max_depth = 0;
        for (const analysis::flame_diff_node& n : diff.nodes) {
            max_depth = std::max(max_depth, n.depth);
        }
        zoom = 0;
    }
    if (!pending.valid() && shown_key != want) {
        const analysis::device_model after = v.model();
        const analysis::device_model before =
            want.moments ? after : model_for(*v.compare_doc_, v.dev().device);
        pending_key = want;
        pending = std::async(std::launch::async, [before, after, want] {
            auto position = [&want](const analysis::device_model& m) {
                return want.at_peak ? m.peak_position(analysis::series::allocated)
                                    : m.event_count();
            };
            const size_t before_at = want.moments ? want.moments->first : position(before);
            const size_t after_at = want.moments ? want.moments->second : position(after);
            result r;
            r.diff = analysis::diff_flames(
                analysis::flame_at(before, before_at, analysis::live_measure::allocated),
                analysis::flame_at(after, after_at, analysis::live_measure::allocated));
            r.before_totals = analysis::totals_of(before.state_after(before_at));
            r.after_totals = analysis::totals_of(after.state_after(after_at));
            return r;
        });
    }
}

}  // namespace memtrail::viewer

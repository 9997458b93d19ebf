// Events: the device's trace as a virtualized table (ImGuiListClipper), filtered by action,
// size, stream and stack text. A filter is applied a slice of entries per frame, so a frame
// stays short even on a trace of millions of entries; the selected row is the selected moment.

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "format.hpp"
#include "memtrail/analysis/frame_text.hpp"
#include "memtrail/viewer/view.hpp"
#include "palette.hpp"

namespace memtrail::viewer {

namespace {

// Entries filtered per frame: a few milliseconds of work.
constexpr size_t filter_slice = 1 << 20;

ImU32 action_color(snapshot::action a) {
    switch (a) {
        case snapshot::action::alloc:
            return palette::allocated;
        case snapshot::action::free_requested:
            return palette::pending_free;
        case snapshot::action::free_completed:
            return IM_COL32(120, 180, 120, 255);
        case snapshot::action::segment_alloc:
        case snapshot::action::segment_map:
            return palette::reserved;
        case snapshot::action::segment_free:
        case snapshot::action::segment_unmap:
            return IM_COL32(190, 150, 220, 255);
        case snapshot::action::oom:
            return palette::oom;
        default:
            return palette::text_dim;
    }
}

}  // namespace

void view::draw_events() {
    events_state& e = events_;
    const analysis::device_model& m = model();
    const size_t count = m.event_count();

    // Filters.
    if (ImGui::Button("actions...")) {
        ImGui::OpenPopup("##actions");
    }
    if (ImGui::BeginPopup("##actions")) {
        for (int a = 0; a < snapshot::action_count; ++a) {
            ImGui::Checkbox(snapshot::action_name(static_cast<snapshot::action>(a)).data(),
                            &e.action_shown[a]);
        }
        ImGui::EndPopup();
    }
    ImGui::SameLine();
    ImGui::SetNextItemWidth(110);
    ImGui::InputScalar("min bytes", ImGuiDataType_U64, &e.min_size);
    ImGui::SameLine();
    ImGui::SetNextItemWidth(110);
    ImGui::InputScalar("max bytes (0: any)", ImGuiDataType_U64, &e.max_size);
    ImGui::SameLine();
    ImGui::SetNextItemWidth(120);
    const auto& streams = dev().streams;
    char stream_label[32] = "all streams";
    if (e.stream >= 0 && static_cast<size_t>(e.stream) < streams.size()) {
        std::snprintf(stream_label, sizeof stream_label, "stream %" PRIu64,
                      streams[static_cast<size_t>(e.stream)]);
    }
    if (ImGui::BeginCombo("##stream", stream_label)) {
        if (ImGui::Selectable("all streams", e.stream < 0)) {
            e.stream = -1;
        }
        for (size_t i = 0; i < streams.size(); ++i) {
            char label[32];
            std::snprintf(label, sizeof label, "stream %" PRIu64, streams[i]);
            if (ImGui::Selectable(label, e.stream == static_cast<int>(i))) {
                e.stream = static_cast<int>(i);
            }
        }
        ImGui::EndCombo();
    }
    ImGui::SameLine();
    ImGui::Checkbox("stack matches search", &e.stack_filter);
    ImGui::SameLine();
    ImGui::SetNextItemWidth(100);
    if (ImGui::InputTextWithHint(
            "##jump", "go to event", e.jump, sizeof e.jump,
            ImGuiInputTextFlags_EnterReturnsTrue | ImGuiInputTextFlags_CharsDecimal)) {
        set_moment(std::strtoull(e.jump, nullptr, 10) + 1);
    }

    // A selected range limits the list to the entries inside it.
    const size_t scan_first = range_ ? std::min(range_->first, count) : 0;
    const size_t scan_last = range_ ? std::min(range_->second, count) : count;

    // The filter, as text, to notice when it changes.
    std::string key;
    bool any_filter = e.min_size > 0 || e.max_size > 0 || e.stream >= 0 ||
                      (e.stack_filter && searching()) || range_.has_value();
    for (int a = 0; a < snapshot::action_count; ++a) {
        key.push_back(e.action_shown[a] ? '1' : '0');
        any_filter = any_filter || !e.action_shown[a];
    }
    key += "|" + std::to_string(e.min_size) + "|" + std::to_string(e.max_size) + "|" +
           std::to_string(e.stream) + "|" + std::to_string(scan_first) + "|" +
           std::to_string(scan_last) + "|" + (e.stack_filter ? search_ : "");
    if (key != e.filter_key || e.filter_device != device_index_) {
        e.filter_key = key;
        e.filter_device = device_index_;
        e.filtered = any_filter;
        e.rows.clear();
        e.scanned = scan_first;
    }
    if (e.filtered && e.scanned < scan_last) {
        const size_t stop = std::min(scan_last, e.scanned + filter_slice);
        const uint64_t stream =
            e.stream >= 0 ? streams[static_cast<size_t>(e.stream)] : uint64_t{0};
        for (size_t i = e.scanned; i < stop; ++i) {
            const snapshot::trace_entry& t = m.entry(i);
            if (!e.action_shown[static_cast<int>(t.kind)] || t.size < e.min_size ||
                (e.max_size > 0 && t.size > e.max_size) || (e.stream >= 0 && t.stream != stream) ||
                (e.stack_filter && !stack_matches(t.stack))) {
                continue;
            }
            e.rows.push_back(static_cast<uint32_t>(i));
        }
        e.scanned = stop;
    }
    const size_t row_count = e.filtered ? e.rows.size() : count;
    auto entry_of_row = [&](size_t row) { return e.filtered ? e.rows[row] : row; };
    ImGui::Text("%s of %s events%s", format_count(row_count).c_str(), format_count(count).c_str(),
                range_ ? " (in the selected range)" : "");
    if (e.filtered && e.scanned < scan_last) {
        ImGui::SameLine();
        ImGui::ProgressBar(static_cast<float>(e.scanned - scan_first) /
                               static_cast<float>(std::max<size_t>(1, scan_last - scan_first)),
                           ImVec2(200, 0), "filtering...");
    }

    // The row of the selected moment, and keyboard steps between rows.
    const size_t selected_entry = moment_ > 0 ? moment_ - 1 : static_cast<size_t>(-1);
    size_t selected_row = static_cast<size_t>(-1);
    if (moment_ > 0) {
        if (!e.filtered) {
            selected_row = selected_entry;
        } else {
            const auto it = std::lower_bound(e.rows.begin(), e.rows.end(), selected_entry);
            if (it != e.rows.end() && *it == selected_entry) {
                selected_row = static_cast<size_t>(it - e.rows.begin());
            }
        }
    }
    const bool scroll_to_selection = e.last_moment != moment_ && selected_row < row_count;
    e.last_moment = moment_;

    const ImGuiTableFlags flags = ImGuiTableFlags_ScrollY | ImGuiTableFlags_RowBg |
                                  ImGuiTableFlags_BordersInnerV | ImGuiTableFlags_Resizable;
    if (!ImGui::BeginTable("##events", 9, flags)) {
        return;
    }
    ImGui::TableSetupScrollFreeze(0, 1);
    ImGui::TableSetupColumn("#", ImGuiTableColumnFlags_WidthFixed, 80);
    ImGui::TableSetupColumn("time", ImGuiTableColumnFlags_WidthFixed, 90);
    ImGui::TableSetupColumn("action", ImGuiTableColumnFlags_WidthFixed, 110);
    ImGui::TableSetupColumn("address", ImGuiTableColumnFlags_WidthFixed, 120);
    ImGui::TableSetupColumn("size", ImGuiTableColumnFlags_WidthFixed, 80);
    ImGui::TableSetupColumn("requested", ImGuiTableColumnFlags_WidthFixed, 80);
    ImGui::TableSetupColumn("stream", ImGuiTableColumnFlags_WidthFixed, 50);
    ImGui::TableSetupColumn("context", ImGuiTableColumnFlags_WidthFixed, 110);
    ImGui::TableSetupColumn("innermost frame", ImGuiTableColumnFlags_WidthStretch);
    ImGui::TableHeadersRow();
    const float row_height = ImGui::GetTextLineHeight() + ImGui::GetStyle().CellPadding.y * 2;
    if (scroll_to_selection) {
        ImGui::SetScrollY(std::max(
            0.0f, static_cast<float>(selected_row) * row_height - ImGui::GetWindowHeight() / 2));
    }
    if (ImGui::IsWindowFocused() && !ImGui::GetIO().WantTextInput && selected_row < row_count) {
        if (ImGui::IsKeyPressed(ImGui::GetKeyIndex(ImGuiKey_UpArrow)) && selected_row > 0) {
            set_moment(entry_of_row(selected_row - 1) + 1);
        }
        if (ImGui::IsKeyPressed(ImGui::GetKeyIndex(ImGuiKey_DownArrow)) &&
            selected_row + 1 < row_count) {
            set_moment(entry_of_row(selected_row + 1) + 1);
        }
    }
    const int64_t t0 = m.time_at(0);
    ImGuiListClipper clipper;
    clipper.Begin(static_cast<int>(std::min<size_t>(row_count, INT32_MAX)), row_height);
    while (clipper.Step()) {
        for (int row = clipper.DisplayStart; row < clipper.DisplayEnd; ++row) {
            const size_t index = entry_of_row(static_cast<size_t>(row));
            const snapshot::trace_entry& t = m.entry(index);
            ImGui::TableNextRow(ImGuiTableRowFlags_None, row_height);
            ImGui::TableNextColumn();
            char label[32];
            std::snprintf(label, sizeof label, "%zu", index);
            if (ImGui::Selectable(label, index == selected_entry,
                                  ImGuiSelectableFlags_SpanAllColumns)) {
                set_moment(index + 1);
                set_allocation(dev().allocation_of_entry(index));
                e.last_moment = moment_;  // clicked here: no need to scroll
            }
            if (ImGui::IsItemHovered() && t.stack != snapshot::no_id) {
                ImGui::BeginTooltip();
                stack_tooltip(t.stack, 16);
                ImGui::EndTooltip();
            }
            ImGui::TableNextColumn();
            ImGui::TextUnformatted(("+" + format_duration(t.time_ns - t0)).c_str());
            ImGui::TableNextColumn();
            ImGui::TextColored(ImGui::ColorConvertU32ToFloat4(action_color(t.kind)), "%s",
                               snapshot::action_name(t.kind).data());
            ImGui::TableNextColumn();
            ImGui::TextUnformatted(format_address(t.address).c_str());
            ImGui::TableNextColumn();
            ImGui::TextUnformatted(format_bytes(t.size).c_str());
            ImGui::TableNextColumn();
            if (t.requested_size > 0) {
                ImGui::TextUnformatted(format_bytes(t.requested_size).c_str());
            }
            ImGui::TableNextColumn();
            ImGui::Text("%" PRIu64, t.stream);
            ImGui::TableNextColumn();
            ImGui::TextUnformatted(format_entry_context(*doc_->source, t).c_str());
            ImGui::TableNextColumn();
            if (t.kind == snapshot::action::annotation_start ||
                t.kind == snapshot::action::annotation_end ||
                t.kind == snapshot::action::annotation_marker) {
                ImGui::TextUnformatted(doc_->source->string_at(t.name).data());
            } else if (t.stack != snapshot::no_id) {
                const auto& frames = doc_->source->stack_at(t.stack);
                if (!frames.empty()) {
                    ImGui::TextUnformatted(
                        analysis::frame_label(*doc_->source, frames.front()).c_str());
                }
            }
        }
    }
    ImGui::EndTable();
}

}  // namespace memtrail::viewer

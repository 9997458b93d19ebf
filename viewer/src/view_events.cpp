// Events: the device's trace as a virtualized table (ImGuiListClipper), filtered by action,
// size, stream and stack text. A filter is applied a slice of entries per frame, so a frame
// stays short even on a trace of millions of entries; the selected row is the selected moment.

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "detail/format.hpp"
#include "detail/palette.hpp"
#include "detail/view_panels.hpp"
#include "memtrail/analysis/frame_text.hpp"

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
    events_state& e = panels_->events;
    const size_t count = model().event_count();
    e.draw_filters(*this);

    // A selected range limits the list to the entries inside it.
    const size_t scan_first = range_ ? std::min(range_->first, count) : 0;
    const size_t scan_last = range_ ? std::min(range_->second, count) : count;
    e.filter(*this, scan_first, scan_last);
    const size_t row_count = e.filtered ? e.rows.size() : count;
    ImGui::Text("%s of %s entries%s", format_count(row_count).c_str(), format_count(count).c_str(),
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

    e.draw_table(*this, row_count, selected_entry, selected_row, scroll_to_selection);
}

void view::events_state::draw_filters(view& v) {
    if (ImGui::Button("actions...")) {
        ImGui::OpenPopup("##actions");
    }
    if (ImGui::BeginPopup("##actions")) {
        for (int a = 0; a < snapshot::action_count; ++a) {
            ImGui::Checkbox(snapshot::action_name(static_cast<snapshot::action>(a)).data(),
                            &action_shown[a]);
        }
        ImGui::EndPopup();
    }
    ImGui::SameLine();
    ImGui::SetNextItemWidth(110);
    ImGui::InputScalar("min bytes", ImGuiDataType_U64, &min_size);
    ImGui::SameLine();
    ImGui::SetNextItemWidth(110);
    ImGui::InputScalar("max bytes (0: any)", ImGuiDataType_U64, &max_size);
    ImGui::SameLine();
    ImGui::SetNextItemWidth(120);
    const auto& streams = v.dev().streams;
    const analysis::stream_names& names = v.dev().stream_names;
    const std::string stream_label = stream >= 0 && static_cast<size_t>(stream) < streams.size()
                                         ? names.name(streams[static_cast<size_t>(stream)])
                                         : std::string("all streams");
    if (ImGui::BeginCombo("##stream", stream_label.c_str())) {
        if (ImGui::Selectable("all streams", stream < 0)) {
            stream = -1;
        }
        for (size_t i = 0; i < streams.size(); ++i) {
            if (ImGui::Selectable(names.name_with_handle(streams[i]).c_str(),
                                  stream == static_cast<int>(i))) {
                stream = static_cast<int>(i);
            }
        }
        ImGui::EndCombo();
    }
    ImGui::SameLine();
    ImGui::Checkbox("stack matches search", &stack_filter);
    ImGui::SameLine();
    ImGui::SetNextItemWidth(100);
    if (ImGui::InputTextWithHint(
            "##jump", "go to entry", jump, sizeof jump,
            ImGuiInputTextFlags_EnterReturnsTrue | ImGuiInputTextFlags_CharsDecimal)) {
        v.set_moment(std::strtoull(jump, nullptr, 10) + 1);
    }
}

void view::events_state::filter(view& v, size_t scan_first, size_t scan_last) {
    const analysis::device_model& m = v.model();
    const auto& streams = v.dev().streams;
    // The filter, as text, to notice when it changes.
    std::string key;
    bool any_filter = min_size > 0 || max_size > 0 || stream >= 0 ||
                      (stack_filter && v.searching()) || v.range_.has_value();
    for (int a = 0; a < snapshot::action_count; ++a) {
        key.push_back(action_shown[a] ? '1' : '0');
        any_filter = any_filter || !action_shown[a];
    }
    key += "|" + std::to_string(min_size) + "|" + std::to_string(max_size) + "|" +
           std::to_string(stream) + "|" + std::to_string(scan_first) + "|" +
           std::to_string(scan_last) + "|" + (stack_filter ? v.search_ : "");
    if (key != filter_key || filter_device != v.device_index_) {
        filter_key = key;
        filter_device = v.device_index_;
        filtered = any_filter;
        rows.clear();
        scanned = scan_first;
    }
    if (filtered && scanned < scan_last) {
        const size_t stop = std::min(scan_last, scanned + filter_slice);
        const uint64_t stream_id = stream >= 0 ? streams[static_cast<size_t>(stream)] : uint64_t{0};
        for (size_t i = scanned; i < stop; ++i) {
            const snapshot::trace_entry& t = m.entry(i);
            if (!action_shown[static_cast<int>(t.kind)] || t.size < min_size ||
                (max_size > 0 && t.size > max_size) || (stream >= 0 && t.stream != stream_id) ||
                (stack_filter && !v.stack_matches(t.stack))) {
                continue;
            }
            rows.push_back(static_cast<uint32_t>(i));
        }
        scanned = stop;
    }
}

void view::events_state::draw_table(view& v, size_t row_count, size_t selected_entry,
                                    size_t selected_row, bool scroll_to_selection) {
    const analysis::device_model& m = v.model();
    const ImGuiTableFlags flags = ImGuiTableFlags_ScrollY | ImGuiTableFlags_RowBg |
                                  ImGuiTableFlags_BordersInnerV | ImGuiTableFlags_Resizable;
    if (!ImGui::BeginTable("##events", 9, flags)) {
        return;
    }
    ImGui::TableSetupScrollFreeze(0, 1);
    ImGui::TableSetupColumn("entry", ImGuiTableColumnFlags_WidthFixed, 80);
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
            v.set_moment(entry_of_row(selected_row - 1) + 1);
        }
        if (ImGui::IsKeyPressed(ImGui::GetKeyIndex(ImGuiKey_DownArrow)) &&
            selected_row + 1 < row_count) {
            v.set_moment(entry_of_row(selected_row + 1) + 1);
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
                v.set_moment(index + 1);
                v.set_allocation(v.dev().allocation_of_entry(index));
                last_moment = v.moment_;  // clicked here: no need to scroll
            }
            if (ImGui::IsItemHovered() && t.stack != snapshot::no_id) {
                ImGui::BeginTooltip();
                v.stack_tooltip(t.stack, 16);
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
            ImGui::TextUnformatted(v.dev().stream_names.name(t.stream).c_str());
            ImGui::TableNextColumn();
            ImGui::TextUnformatted(format_entry_context(*v.doc_->source, t).c_str());
            ImGui::TableNextColumn();
            if (t.kind == snapshot::action::annotation_start ||
                t.kind == snapshot::action::annotation_end ||
                t.kind == snapshot::action::annotation_marker) {
                ImGui::TextUnformatted(v.doc_->source->string_at(t.name).data());
            } else if (t.stack != snapshot::no_id) {
                const auto& frames = v.doc_->source->stack_at(t.stack);
                if (!frames.empty()) {
                    ImGui::TextUnformatted(
                        analysis::frame_label(*v.doc_->source, frames.front()).c_str());
                }
            }
        }
    }
    ImGui::EndTable();
}

}  // namespace memtrail::viewer

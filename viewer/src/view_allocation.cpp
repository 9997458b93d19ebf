// Allocation: the selected allocation's size, request, rounding waste, stream and lifetime, with
// its allocation and free stacks; with nothing selected, the blocks live at the moment to pick
// one from.

#include <algorithm>
#include <cinttypes>
#include <cstdio>

#include "detail/format.hpp"
#include "detail/palette.hpp"
#include "detail/table_row.hpp"
#include "detail/view_panels.hpp"
#include "memtrail/analysis/frame_text.hpp"

namespace memtrail::viewer {

namespace {

void full_stack(const snapshot::snapshot& source, snapshot::stack_id stack) {
    if (stack == snapshot::no_id) {
        ImGui::TextDisabled("%s", analysis::unknown_stack_label);
        return;
    }
    const std::vector<std::string> frames = analysis::stack_labels(source, stack);
    // Innermost first, as debuggers print a backtrace.
    for (auto it = frames.rbegin(); it != frames.rend(); ++it) {
        ImGui::TextUnformatted(it->c_str());
    }
}

}  // namespace

void view::allocation_state::lifetime_strip(const view& v,
                                            const analysis::allocation_lifetime& life,
                                            size_t freed_at, size_t released_at) {
    // The overview's allocated curve (per pixel, already built) with the allocation's life
    // over it: live in the allocation colour, waiting for other streams in the pending colour.
    const float width = ImGui::GetContentRegionAvail().x;
    const float height = 48;
    const ImVec2 origin = ImGui::GetCursorScreenPos();
    const ImVec2 end(origin.x + width, origin.y + height);
    ImDrawList* draw = ImGui::GetWindowDrawList();
    draw->AddRectFilled(origin, end, IM_COL32(24, 25, 30, 255));
    const double total = v.axis_end();
    auto x_of = [&](size_t position) {
        return origin.x + static_cast<float>(v.axis_of(position) / total) * width;
    };
    const timeline_state& timeline = v.panels_->timeline;
    const auto& curve = timeline.overview_allocated;
    uint64_t top = 1;
    for (const analysis::curve_bucket& b : curve) {
        top = std::max(top, b.max);
    }
    const float column = curve.empty() ? 0 : width / static_cast<float>(curve.size());
    for (size_t i = 0; i < curve.size(); ++i) {
        const float x0 =
            timeline.by_time ? origin.x + column * static_cast<float>(i) : x_of(curve[i].first);
        const float x1 = timeline.by_time ? x0 + column : x_of(curve[i].last);
        const float y = end.y - static_cast<float>(static_cast<double>(curve[i].max) /
                                                   static_cast<double>(top)) *
                                    (height - 4);
        draw->AddRectFilled(ImVec2(x0, y), ImVec2(std::max(x1, x0 + 1), end.y),
                            IM_COL32(96, 104, 120, 255));
    }
    const float live_x0 = x_of(life.begin);
    const float live_x1 = std::max(live_x0 + 2, x_of(freed_at));
    draw->AddRectFilled(ImVec2(live_x0, origin.y), ImVec2(live_x1, end.y),
                        (palette::allocated & 0x00ffffffu) | 0x90000000u);
    if (released_at > freed_at) {
        draw->AddRectFilled(ImVec2(live_x1, origin.y),
                            ImVec2(std::max(live_x1 + 2, x_of(released_at)), end.y),
                            (palette::pending_free & 0x00ffffffu) | 0x90000000u);
    }
    const float moment_x = x_of(v.moment_);
    draw->AddLine(ImVec2(moment_x, origin.y), ImVec2(moment_x, end.y), palette::selection, 1.5f);
    ImGui::Dummy(ImVec2(width, height));
    ImGui::TextDisabled(
        "its life in the trace: blue while allocated, orange while its free waits "
        "for other streams; yellow: the selected moment");
}

bool view::select_largest_live_allocation() {
    const snapshot::block* largest = nullptr;
    for (const snapshot::segment& s : state_at_moment().segments) {
        for (const snapshot::block& b : s.blocks) {
            if (b.state != snapshot::block_state::inactive &&
                (largest == nullptr || b.size > largest->size)) {
                largest = &b;
            }
        }
    }
    if (largest == nullptr) {
        return false;
    }
    set_allocation(dev().allocation_at(largest->address, moment_));
    return allocation_.has_value();
}

void view::allocation_state::draw_live_list(view& v) {
    ImGui::TextDisabled(
        "No allocation selected: click one in the timeline, the segments or the events, or "
        "pick one of the blocks live at the moment:");
    if (!valid || device_index != v.device_index_ || position != v.moment_) {
        blocks.clear();
        for (const snapshot::segment& s : v.state_at_moment().segments) {
            for (const snapshot::block& b : s.blocks) {
                if (b.state != snapshot::block_state::inactive) {
                    blocks.push_back(b);
                }
            }
        }
        std::sort(blocks.begin(), blocks.end(),
                  [](const snapshot::block& a, const snapshot::block& b) {
                      return a.size != b.size ? a.size > b.size : a.address < b.address;
                  });
        valid = true;
        device_index = v.device_index_;
        position = v.moment_;
    }
    const ImGuiTableFlags flags =
        ImGuiTableFlags_ScrollY | ImGuiTableFlags_RowBg | ImGuiTableFlags_BordersInnerV;
    if (ImGui::BeginTable("##live", 4, flags)) {
        ImGui::TableSetupScrollFreeze(0, 1);
        ImGui::TableSetupColumn("size", ImGuiTableColumnFlags_WidthFixed, 90);
        ImGui::TableSetupColumn("address", ImGuiTableColumnFlags_WidthFixed, 130);
        ImGui::TableSetupColumn("state", ImGuiTableColumnFlags_WidthFixed, 150);
        ImGui::TableSetupColumn("innermost frame", ImGuiTableColumnFlags_WidthStretch);
        ImGui::TableHeadersRow();
        ImGuiListClipper clipper;
        clipper.Begin(static_cast<int>(blocks.size()));
        while (clipper.Step()) {
            for (int row = clipper.DisplayStart; row < clipper.DisplayEnd; ++row) {
                const snapshot::block& b = blocks[static_cast<size_t>(row)];
                ImGui::TableNextRow();
                ImGui::TableNextColumn();
                ImGui::PushID(row);
                if (ImGui::Selectable(format_bytes(b.size).c_str(), false,
                                      ImGuiSelectableFlags_SpanAllColumns)) {
                    v.set_allocation(v.dev().allocation_at(b.address, v.moment_));
                }
                ImGui::PopID();
                if (ImGui::IsItemHovered()) {
                    ImGui::BeginTooltip();
                    v.stack_tooltip(b.stack, 16);
                    ImGui::EndTooltip();
                }
                ImGui::TableNextColumn();
                ImGui::TextUnformatted(format_address(b.address).c_str());
                ImGui::TableNextColumn();
                ImGui::TextUnformatted(snapshot::block_state_name(b.state).data());
                ImGui::TableNextColumn();
                const auto& frames = v.doc_->source->stack_at(b.stack);
                if (!frames.empty()) {
                    ImGui::TextUnformatted(
                        analysis::frame_label(*v.doc_->source, frames.front()).c_str());
                }
            }
        }
        ImGui::EndTable();
    }
}

void view::draw_allocation() {
    const analysis::device_model& m = model();
    const size_t count = m.event_count();
    if (!allocation_) {
        panels_->allocation.draw_live_list(*this);
        return;
    }

    const analysis::allocation_lifetime& life = m.lifetimes()[*allocation_];
    // The entries that made and ended it, where the trace holds them.
    const snapshot::trace_entry* alloc_entry =
        !life.from_before_trace && life.begin > 0 ? &m.entry(life.begin - 1) : nullptr;
    const snapshot::trace_entry* free_entry = nullptr;
    if (life.end > 0 && life.end <= count) {
        const snapshot::trace_entry& e = m.entry(life.end - 1);
        if (e.kind == snapshot::action::free_requested && e.address == life.address) {
            free_entry = &e;
        }
    }
    const bool freed = free_entry != nullptr;
    const bool released = freed && life.released > 0 && life.released <= count &&
                          m.entry(life.released - 1).kind == snapshot::action::free_completed &&
                          m.entry(life.released - 1).address == life.address;

    ImGui::Text("Allocation of %s at %s", format_bytes(life.size).c_str(),
                format_address(life.address).c_str());
    ImGui::SameLine();
    if (ImGui::SmallButton("clear (Esc)")) {
        allocation_.reset();
        return;
    }
    if (ImGui::BeginTable("##properties", 2, ImGuiTableFlags_SizingFixedFit)) {
        const uint64_t waste = life.size - std::min(life.size, life.requested_size);
        name_value_row("block size",
                       format_bytes(life.size) + " (" + format_count(life.size) + " B)");
        name_value_row("requested", format_bytes(life.requested_size) + " (" +
                                        format_count(life.requested_size) + " B)");
        name_value_row("rounding waste", format_bytes(waste));
        if (alloc_entry != nullptr) {
            char stream[32];
            std::snprintf(stream, sizeof stream, "%" PRIu64, alloc_entry->stream);
            name_value_row("stream", stream);
            if (const std::string context = format_entry_context(*doc_->source, *alloc_entry);
                !context.empty()) {
                name_value_row("context", context);
            }
        }
        name_value_row("allocated",
                       life.from_before_trace
                           ? std::string("before the trace began")
                           : position_label(life.begin) + ", +" +
                                 format_duration(m.time_at(life.begin) - m.time_at(0)));
        name_value_row("freed", freed ? position_label(life.end) + ", +" +
                                            format_duration(m.time_at(life.end) - m.time_at(0))
                                      : std::string("not freed by the end of the trace"));
        if (freed) {
            name_value_row(
                "free completed",
                released ? position_label(life.released) + " (pending " +
                               format_duration(m.time_at(life.released) - m.time_at(life.end)) + ")"
                         : std::string("still pending at the end of the trace"));
        }
        const size_t until = freed ? life.end : count;
        name_value_row("lifetime", format_count(until - life.begin) + " events, " +
                                       format_duration(m.time_at(until) - m.time_at(life.begin)));
        if (dev().categories) {
            const analysis::category_assignment& a = dev().categories->assignments()[*allocation_];
            char confidence[16];
            std::snprintf(confidence, sizeof confidence, "%.2f", a.confidence());
            name_value_row("category", std::string(analysis::category_name(a.category)) +
                                           " (confidence " + confidence +
                                           "): " + std::string(analysis::rule_description(a.rule)));
        }
        ImGui::EndTable();
    }
    allocation_state::lifetime_strip(*this, life, freed ? life.end : count,
                                     released ? life.released : count);
    if (!life.from_before_trace && ImGui::Button("go to allocation")) {
        set_moment(life.begin);
    }
    if (freed) {
        ImGui::SameLine();
        if (ImGui::Button("go to free")) {
            set_moment(life.end);
        }
    }
    ImGui::BeginChild("##stacks");
    ImGui::TextColored(ImGui::ColorConvertU32ToFloat4(palette::allocated), "Allocation stack");
    ImGui::Separator();
    full_stack(*doc_->source, life.stack);
    ImGui::Spacing();
    ImGui::TextColored(ImGui::ColorConvertU32ToFloat4(palette::pending_free), "Free stack");
    ImGui::Separator();
    if (freed) {
        full_stack(*doc_->source, free_entry->stack);
    } else {
        ImGui::TextDisabled("not freed");
    }
    ImGui::EndChild();
}

}  // namespace memtrail::viewer

// OOM: the trace's out-of-memory events and, for the selected one, the analysis's report: what
// was asked, what the device had free of its total, allocated against reserved, the largest free
// block per pool and stream, fragmentation, and the live blocks that stood in the way.

#include <algorithm>
#include <cctype>
#include <cstdio>

#include "detail/format.hpp"
#include "detail/palette.hpp"
#include "detail/table_row.hpp"
#include "detail/view_panels.hpp"

namespace memtrail::viewer {

namespace {

// One horizontal bar of the device's memory: where every byte was when the request failed.
void device_bar(const analysis::oom_report& r) {
    const analysis::memory_totals& t = r.totals;
    const uint64_t known = t.reserved + r.device_free;
    const uint64_t total = std::max(r.device_total, known);
    struct part {
        uint64_t bytes;
        ImU32 color;
        const char* name;
    };
    const part parts[] = {
        {t.allocated, palette::allocated, "allocated"},
        {t.pending_free, palette::pending_free, "pending free"},
        {t.free, palette::free_block, "free in the cache"},
        {r.device_free, IM_COL32(90, 160, 110, 255), "free on the device"},
        {total - known, IM_COL32(110, 80, 130, 255), "used outside this allocator"},
    };
    const float width = ImGui::GetContentRegionAvail().x;
    const float height = 22;
    const ImVec2 origin = ImGui::GetCursorScreenPos();
    ImDrawList* draw = ImGui::GetWindowDrawList();
    float x = origin.x;
    for (const part& p : parts) {
        const float w =
            total == 0
                ? 0
                : static_cast<float>(static_cast<double>(p.bytes) / static_cast<double>(total)) *
                      width;
        draw->AddRectFilled(ImVec2(x, origin.y), ImVec2(x + w, origin.y + height), p.color);
        if (ImGui::IsMouseHoveringRect(ImVec2(x, origin.y), ImVec2(x + w, origin.y + height))) {
            ImGui::SetTooltip("%s: %s", p.name, format_bytes(p.bytes).c_str());
        }
        x += w;
    }
    // The request, drawn to the same scale from the left.
    const float asked =
        total == 0
            ? 0
            : static_cast<float>(static_cast<double>(r.requested) / static_cast<double>(total)) *
                  width;
    draw->AddRect(ImVec2(origin.x, origin.y - 3),
                  ImVec2(origin.x + std::max(2.0f, asked), origin.y + height + 3), palette::oom, 0,
                  0, 2.0f);
    ImGui::Dummy(ImVec2(width, height + 4));
    for (const part& p : parts) {
        const ImVec2 at = ImGui::GetCursorScreenPos();
        const float h = ImGui::GetTextLineHeight();
        draw->AddRectFilled(ImVec2(at.x, at.y + 2), ImVec2(at.x + h, at.y + h - 2), p.color);
        ImGui::Dummy(ImVec2(h, h));
        ImGui::SameLine();
        ImGui::Text("%s %s", p.name, format_bytes(p.bytes).c_str());
        ImGui::SameLine(0, 18);
    }
    ImGui::TextColored(ImGui::ColorConvertU32ToFloat4(palette::oom), "[ ] the request");
}

std::string device_total_text(const analysis::oom_report& r) {
    switch (r.total_source) {
        case analysis::device_total_source::snapshot:
            return format_bytes(r.assumed_device_total) + " (the snapshot's)";
        case analysis::device_total_source::option:
            return format_bytes(r.assumed_device_total) + " (given)";
        case analysis::device_total_source::at_least:
            return "at least " + format_bytes(r.assumed_device_total) +
                   " (unknown: reserved + free)";
    }
    return "";
}

std::string cap_text(const analysis::oom_cap& cap) {
    if (cap.recorded) {
        return format_bytes(cap.lower) + (cap.binding ? ", reached" : "");
    }
    return format_bytes(cap.lower) + " to " + format_bytes(cap.upper) + " (inferred)";
}

// The private pools at the OOM: each with its owner and what releasing it would give back.
void private_pools_table(const analysis::oom_report& r, const analysis::stream_names& streams) {
    if (r.private_pools.empty()) {
        return;
    }
    ImGui::Spacing();
    ImGui::TextUnformatted(
        "Private pools: they serve only their owner; releasing one (deleting its CUDA graph or "
        "MemPool) gives back its wholly free segments");
    const ImGuiTableFlags flags =
        ImGuiTableFlags_SizingFixedFit | ImGuiTableFlags_RowBg | ImGuiTableFlags_BordersInnerV;
    if (ImGui::BeginTable("##private_pools", 6, flags)) {
        for (const char* name : {"pool", "owner", "stream", "reserved", "free", "releasable"}) {
            ImGui::TableSetupColumn(name);
        }
        ImGui::TableHeadersRow();
        for (const analysis::oom_private_pool& p : r.private_pools) {
            ImGui::TableNextRow();
            ImGui::TableNextColumn();
            ImGui::TextUnformatted(
                p.pool ? (analysis::pool_name(*p.pool) + (p.inferred ? " ~" : "")).c_str()
                       : "unnamed");
            ImGui::TableNextColumn();
            ImGui::TextUnformatted(p.pool ? p.owner.c_str() : "a private pool an OOM left cached");
            ImGui::TableNextColumn();
            ImGui::TextUnformatted(streams.name(p.stream).c_str());
            ImGui::TableNextColumn();
            ImGui::TextUnformatted(format_bytes(p.reserved).c_str());
            ImGui::TableNextColumn();
            ImGui::TextUnformatted(format_bytes(p.free).c_str());
            ImGui::TableNextColumn();
            ImGui::TextUnformatted(format_bytes(p.releasable).c_str());
        }
        ImGui::EndTable();
    }
    if (std::any_of(r.private_pools.begin(), r.private_pools.end(),
                    [](const analysis::oom_private_pool& p) { return p.inferred; })) {
        ImGui::TextDisabled(
            "~ some segments' pool inferred from their stream (the snapshot names the pools only "
            "of the segments it still holds)");
    }
}

// The report's numbers, and the free space of every pool and stream beside them.
void report_tables(const analysis::oom_report& r, const analysis::stream_names& streams) {
    const ImGuiTableFlags flags = ImGuiTableFlags_SizingFixedFit | ImGuiTableFlags_RowBg;
    ImGui::BeginGroup();
    if (ImGui::BeginTable("##numbers", 2, flags)) {
        name_value_row("asked (rounded)", format_bytes(r.requested));
        name_value_row("free on the device", format_bytes(r.device_free));
        name_value_row("device total", device_total_text(r));
        if (r.cap.recorded || r.cap.binding) {
            name_value_row("memory cap", cap_text(r.cap));
        }
        name_value_row("reserved", format_bytes(r.totals.reserved));
        name_value_row("allocated", format_bytes(r.totals.allocated));
        name_value_row("pending free", format_bytes(r.totals.pending_free));
        name_value_row("free in the cache", format_bytes(r.totals.free));
        name_value_row("largest free block", format_bytes(r.totals.largest_free));
        name_value_row("usable by the request", format_bytes(r.usable_free));
        name_value_row("free in private pools", format_bytes(r.private_pool_free));
        name_value_row("held outside the allocator",
                       r.outside_known ? format_bytes(r.outside) : std::string("unknown"));
        char fragmentation[32];
        std::snprintf(fragmentation, sizeof fragmentation, "%.1f%%", r.fragmentation * 100.0);
        name_value_row("fragmentation", fragmentation);
        ImGui::EndTable();
    }
    ImGui::EndGroup();
    ImGui::SameLine(0, 30);
    ImGui::BeginGroup();
    ImGui::TextUnformatted("Free space by pool and stream");
    if (ImGui::BeginTable("##pools", 6, flags | ImGuiTableFlags_BordersInnerV)) {
        ImGui::TableSetupColumn("pool");
        ImGui::TableSetupColumn("stream");
        ImGui::TableSetupColumn("free");
        ImGui::TableSetupColumn("largest free");
        ImGui::TableSetupColumn("free blocks");
        ImGui::TableSetupColumn("pending free");
        ImGui::TableHeadersRow();
        for (const analysis::free_space& f : r.free_by_pool) {
            ImGui::TableNextRow();
            const bool usable = f.is_large == r.is_large && f.stream == r.stream;
            if (usable) {
                ImGui::TableSetBgColor(ImGuiTableBgTarget_RowBg0, IM_COL32(90, 60, 60, 120));
            }
            ImGui::TableNextColumn();
            ImGui::TextUnformatted(f.is_large ? "large" : "small");
            ImGui::TableNextColumn();
            ImGui::Text("%s%s", streams.name(f.stream).c_str(), usable ? " (the request's)" : "");
            ImGui::TableNextColumn();
            ImGui::TextUnformatted(format_bytes(f.free).c_str());
            ImGui::TableNextColumn();
            ImGui::TextUnformatted(format_bytes(f.largest_free).c_str());
            ImGui::TableNextColumn();
            ImGui::TextUnformatted(format_count(f.free_blocks).c_str());
            ImGui::TableNextColumn();
            ImGui::TextUnformatted(format_bytes(f.pending_free).c_str());
        }
        ImGui::EndTable();
    }
    ImGui::EndGroup();
    private_pools_table(r, streams);
}

}  // namespace

void view::draw_oom() {
    const std::vector<size_t>& ooms = dev().oom_entries;
    if (ooms.empty()) {
        ImGui::TextDisabled("No out-of-memory event in this trace.");
        return;
    }
    oom_state& o = panels_->oom;
    o.draw_picker(*this);
    if (!o.valid || o.device_index != device_index_ || o.shown != o.selected) {
        o.report = analysis::analyze_oom(model(), ooms[o.selected]);
        o.valid = true;
        o.device_index = device_index_;
        o.shown = o.selected;
    }
    const analysis::oom_report& r = o.report;
    const analysis::stream_names& streams = dev().stream_names;

    ImGui::TextColored(ImGui::ColorConvertU32ToFloat4(palette::oom),
                       "Out of memory at %s (+%s): asked for %s on %s, %s pool",
                       position_label(r.entry + 1).c_str(),
                       format_duration(model().time_at(r.entry + 1) - model().time_at(0)).c_str(),
                       format_bytes(r.requested).c_str(), streams.name(r.stream).c_str(),
                       r.is_large ? "large" : "small");
    ImGui::SameLine();
    if (ImGui::SmallButton("go to this moment")) {
        set_moment(r.entry + 1);
    }
    if (r.secondary) {
        ImGui::Text("Verdict: %s (secondary: %s)", analysis::verdict_name(r.verdict).data(),
                    analysis::verdict_name(*r.secondary).data());
    } else {
        ImGui::Text("Verdict: %s", analysis::verdict_name(r.verdict).data());
    }
    ImGui::PushTextWrapPos(0);
    ImGui::TextDisabled("%s", r.explanation.c_str());
    for (const std::string& unknown : r.unknowns) {
        ImGui::TextDisabled("Unknown: %s", unknown.c_str());
    }
    ImGui::PopTextWrapPos();
    o.draw_remedies(*this);
    ImGui::Spacing();
    device_bar(r);
    ImGui::Spacing();

    ImGui::BeginChild("##oom_details");
    report_tables(r, streams);
    o.draw_blockers_and_holders(*this);
    ImGui::Spacing();
    ImGui::TextUnformatted("Stack of the failed request");
    ImGui::Separator();
    stack_tooltip(r.stack, 64);
    ImGui::EndChild();
}

void view::oom_state::draw_remedies(view& v) {
    if (v.doc().path.empty()) {
        ImGui::TextDisabled("Remedies: the what-if replays need the snapshot's file.");
        return;
    }
    if (!remedies || remedies->device() != v.dev().device) {
        remedies = std::make_unique<remedies_job>(v.doc().path, v.dev().device);
    }
    ImGui::PushTextWrapPos(0);
    if (!remedies->done()) {
        ImGui::TextDisabled(
            "Remedies: checking each by replaying the trace under it (memtrail oom)...");
    } else if (!remedies->error().empty()) {
        ImGui::TextDisabled("Remedies: not available: %s", remedies->error().c_str());
    } else if (const auto it = remedies->by_entry().find(report.entry);
               it == remedies->by_entry().end()) {
        ImGui::TextDisabled("Remedies: memtrail oom reported none for this entry.");
    } else if (!it->second.checked) {
        ImGui::TextUnformatted(std::string(analysis::remedies_not_checked_text()).c_str());
    } else {
        std::string heading = analysis::remedies_heading(report);
        heading.front() =
            static_cast<char>(std::toupper(static_cast<unsigned char>(heading.front())));
        ImGui::TextUnformatted(heading.c_str());
        for (const analysis::remedy_outcome& remedy : it->second.tried) {
            ImGui::Bullet();
            const ImVec4 color = remedy.avoids ? ImVec4(0.45f, 0.85f, 0.5f, 1.0f)
                                               : ImGui::GetStyle().Colors[ImGuiCol_TextDisabled];
            ImGui::TextColored(color, "%s", analysis::remedy_sentence(remedy).c_str());
        }
        if (const auto conclusion = analysis::remedies_conclusion(report, it->second.tried)) {
            ImGui::Bullet();
            ImGui::TextUnformatted(conclusion->c_str());
        }
    }
    ImGui::PopTextWrapPos();
}

void view::oom_state::draw_picker(view& v) {
    const std::vector<size_t>& ooms = v.dev().oom_entries;
    if (followed_moment != v.moment_) {
        // The last OOM at or before the moment; the first when the moment is before them all.
        const auto after = std::upper_bound(ooms.begin(), ooms.end(), v.moment_,
                                            [](size_t m, size_t entry) { return m < entry + 1; });
        selected = after == ooms.begin() ? 0 : static_cast<size_t>(after - ooms.begin()) - 1;
        followed_moment = v.moment_;
    }
    selected = std::min(selected, ooms.size() - 1);
    if (ooms.size() > 1) {
        ImGui::SetNextItemWidth(420);
        char current[96];
        std::snprintf(current, sizeof current, "OOM %zu of %zu: %s", selected + 1, ooms.size(),
                      position_label(ooms[selected] + 1).c_str());
        if (ImGui::BeginCombo("##oom", current)) {
            ImGuiListClipper clipper;
            clipper.Begin(static_cast<int>(ooms.size()));
            while (clipper.Step()) {
                for (int i = clipper.DisplayStart; i < clipper.DisplayEnd; ++i) {
                    const snapshot::trace_entry& e = v.model().entry(ooms[static_cast<size_t>(i)]);
                    char label[96];
                    std::snprintf(label, sizeof label, "%s: %s",
                                  position_label(ooms[static_cast<size_t>(i)] + 1).c_str(),
                                  format_bytes(e.size).c_str());
                    ImGui::PushID(i);
                    if (ImGui::Selectable(label, static_cast<size_t>(i) == selected)) {
                        selected = static_cast<size_t>(i);
                    }
                    ImGui::PopID();
                }
            }
            ImGui::EndCombo();
        }
        ImGui::SameLine();
    }
}

void view::oom_state::draw_blockers_and_holders(view& v) {
    const analysis::oom_report& r = report;
    ImGui::Spacing();
    ImGui::Text("Blockers: live blocks whose release would have made room (%zu)",
                r.blockers.size());
    for (size_t i = 0; i < r.blockers.size(); ++i) {
        const analysis::oom_blocker& b = r.blockers[i];
        ImGui::PushID(static_cast<int>(i));
        const bool open = ImGui::TreeNodeEx(
            "##blocker", i == 0 ? ImGuiTreeNodeFlags_DefaultOpen : 0,
            "segment %s: release %s in %zu blocks%s to free %s at %s",
            format_address(b.segment_address).c_str(), format_bytes(b.live_bytes).c_str(),
            b.blocks.size(), b.only_pending_frees() ? " (all pending frees)" : "",
            format_bytes(b.range_size).c_str(), format_address(b.range_address).c_str());
        if (open) {
            for (const snapshot::block& blk : b.blocks) {
                ImGui::PushID(static_cast<const void*>(&blk));
                char label[160];
                std::snprintf(label, sizeof label, "%s  %s  %s",
                              format_address(blk.address).c_str(), format_bytes(blk.size).c_str(),
                              snapshot::block_state_name(blk.state).data());
                if (ImGui::Selectable(
                        label, v.allocation_ &&
                                   v.allocation_ == v.dev().allocation_at(blk.address, r.entry))) {
                    v.set_allocation(v.dev().allocation_at(blk.address, r.entry));
                }
                if (ImGui::IsItemHovered()) {
                    ImGui::BeginTooltip();
                    v.stack_tooltip(blk.stack, 16);
                    ImGui::EndTooltip();
                }
                ImGui::PopID();
            }
            ImGui::TreePop();
        }
        ImGui::PopID();
    }
    ImGui::Spacing();
    ImGui::Text("Largest holders: live memory by where it was allocated (%zu)", r.holders.size());
    for (size_t i = 0; i < r.holders.size(); ++i) {
        const analysis::oom_holder& h = r.holders[i];
        ImGui::PushID(static_cast<int>(i + r.blockers.size()));
        if (ImGui::TreeNodeEx("##holder", i == 0 ? ImGuiTreeNodeFlags_DefaultOpen : 0,
                              "%s in %zu blocks", format_bytes(h.bytes).c_str(), h.blocks)) {
            v.stack_tooltip(h.stack, 16);
            ImGui::TreePop();
        }
        ImGui::PopID();
    }
}

}  // namespace memtrail::viewer

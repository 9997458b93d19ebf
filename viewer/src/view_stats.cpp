// Stats: torch.cuda.memory_summary() as the trace implies it at the selected moment, the
// allocator's settings, the device and how well the trace fits the snapshot.

#include <cinttypes>
#include <cstdio>

#include "detail/format.hpp"
#include "detail/palette.hpp"
#include "detail/table_row.hpp"
#include "detail/view_panels.hpp"
#include "memtrail/rules/statistics.hpp"

namespace memtrail::viewer {

namespace {

std::string bytes_or_unlimited(int64_t bytes) {
    return bytes < 0 ? std::string("unlimited") : format_bytes(static_cast<uint64_t>(bytes));
}

}  // namespace

void view::draw_stats() {
    const analysis::memory_state& state = state_at_moment();
    stats_state& summary = panels_->stats;
    if (!summary.valid || summary.device_index != device_index_ || summary.position != moment_) {
        summary.summary = memtrail::format_memory_summary(state.stats, dev().device);
        summary.valid = true;
        summary.device_index = device_index_;
        summary.position = moment_;
    }
    const float side_width = 420;
    ImGui::BeginChild("##summary", ImVec2(ImGui::GetContentRegionAvail().x - side_width - 8, 0),
                      true, ImGuiWindowFlags_HorizontalScrollbar);
    ImGui::TextDisabled("memory_summary() at the selected moment");
    ImGui::TextUnformatted(summary.summary.c_str());
    ImGui::EndChild();
    ImGui::SameLine();
    ImGui::BeginChild("##side", ImVec2(side_width, 0));

    const snapshot::snapshot& s = *doc_->source;
    const ImGuiTableFlags flags = ImGuiTableFlags_SizingFixedFit | ImGuiTableFlags_RowBg;
    ImGui::TextColored(ImGui::ColorConvertU32ToFloat4(palette::allocated), "At the moment");
    const analysis::memory_totals& t = panels_->state.totals;
    if (ImGui::BeginTable("##totals", 2, flags)) {
        name_value_row("reserved", format_bytes(t.reserved));
        name_value_row("allocated", format_bytes(t.allocated));
        name_value_row("pending free", format_bytes(t.pending_free));
        name_value_row("free in segments", format_bytes(t.free));
        name_value_row("requested", format_bytes(t.requested));
        name_value_row("rounding waste", format_bytes(t.rounding_waste));
        name_value_row("largest free block", format_bytes(t.largest_free));
        char fragmentation[32];
        std::snprintf(fragmentation, sizeof fragmentation, "%.1f%%", t.fragmentation() * 100.0);
        name_value_row("fragmentation", fragmentation);
        name_value_row("segments", format_count(t.segments));
        name_value_row("blocks (allocated / pending / free)",
                       format_count(t.allocated_blocks) + " / " +
                           format_count(t.pending_free_blocks) + " / " +
                           format_count(t.free_blocks));
        ImGui::EndTable();
    }

    ImGui::Spacing();
    ImGui::TextColored(ImGui::ColorConvertU32ToFloat4(palette::allocated), "Allocator settings");
    const snapshot::allocator_settings& a = s.settings;
    if (ImGui::BeginTable("##settings", 2, flags)) {
        name_value_row("PYTORCH_CUDA_ALLOC_CONF", a.conf.empty() ? std::string("(unset)") : a.conf);
        name_value_row("max_split_size", bytes_or_unlimited(a.max_split_size));
        name_value_row("max_non_split_rounding_size", format_bytes(a.max_non_split_rounding_size));
        char threshold[32];
        std::snprintf(threshold, sizeof threshold, "%.2f", a.garbage_collection_threshold);
        name_value_row("garbage_collection_threshold", threshold);
        name_value_row("expandable_segments", a.expandable_segments ? "true" : "false");
        std::string divisions;
        for (size_t i = 0; i < a.roundup_power2_divisions.size(); ++i) {
            if (a.roundup_power2_divisions[i] != 0) {
                divisions += (divisions.empty() ? "" : ", ") + format_bytes(uint64_t{1} << i) +
                             ":" + std::to_string(a.roundup_power2_divisions[i]);
            }
        }
        name_value_row("roundup_power2_divisions",
                       divisions.empty() ? std::string("none") : divisions);
        for (const auto& [key, value] : a.other) {
            name_value_row(key.c_str(), value);
        }
        ImGui::EndTable();
    }

    ImGui::Spacing();
    ImGui::TextColored(ImGui::ColorConvertU32ToFloat4(palette::allocated), "Snapshot");
    if (ImGui::BeginTable("##snapshot", 2, flags)) {
        name_value_row("file", doc_->path.empty() ? doc_->name : doc_->path);
        name_value_row("producer", s.info.producer);
        if (!s.info.host.empty()) {
            name_value_row("host", s.info.host + " (pid " + std::to_string(s.info.pid) + ")");
        }
        for (const snapshot::device_properties& d : s.info.devices) {
            if (d.device == dev().device) {
                char text[160];
                std::snprintf(text, sizeof text, "%s, %s, sm_%d%d, %d SMs", d.name.c_str(),
                              format_bytes(d.total_memory).c_str(), d.major, d.minor,
                              d.multiprocessor_count);
                name_value_row("device", text);
            }
        }
        name_value_row("trace entries", format_count(model().event_count()));
        if (const snapshot::device_trace* trace = s.find_trace(dev().device);
            trace != nullptr && trace->dropped > 0) {
            name_value_row("dropped entries", format_count(trace->dropped));
        }
        const analysis::reconstruction_report& report = model().report();
        name_value_row("entries that did not fit", format_count(report.anomalies));
        name_value_row("replay matches final segments", report.matches_final_segments
                                                            ? std::string("yes")
                                                            : "no: " + report.first_difference);
        ImGui::EndTable();
    }
    ImGui::EndChild();
}

}  // namespace memtrail::viewer

// Flame: live bytes by allocation stack as a flame graph or an icicle, at the selected moment,
// at the peak, each stack at its worst over the selected range, or what the range allocated and
// still holds at its end. The graph is computed in the background; the previous one stays on
// screen until the new one is ready.

#include <algorithm>
#include <chrono>
#include <functional>
#include <future>
#include <string>
#include <string_view>

#include "detail/flame_canvas.hpp"
#include "detail/format.hpp"
#include "detail/palette.hpp"
#include "detail/text_search.hpp"
#include "detail/view_panels.hpp"

namespace memtrail::viewer {

namespace {

uint32_t deepest(const std::vector<analysis::flame_node>& nodes) {
    uint32_t depth = 0;
    for (const analysis::flame_node& n : nodes) {
        depth = std::max(depth, n.depth);
    }
    return depth;
}

// The names from the root's child down to `node`, to find the same place in a new graph.
std::vector<std::string> path_of(const std::vector<analysis::flame_node>& nodes, uint32_t node) {
    std::vector<std::string> path;
    for (; node != 0; node = nodes[node].parent) {
        path.push_back(nodes[node].name);
    }
    std::reverse(path.begin(), path.end());
    return path;
}

uint32_t find_path(const std::vector<analysis::flame_node>& nodes,
                   const std::vector<std::string>& path) {
    uint32_t node = 0;
    for (const std::string& name : path) {
        const auto& children = nodes[node].children;
        const auto it = std::find_if(children.begin(), children.end(),
                                     [&](uint32_t c) { return nodes[c].name == name; });
        if (it == children.end()) {
            break;
        }
        node = *it;
    }
    return node;
}

// The function part of a frame label "function (file:line)": one colour per function however
// many lines of it appear.
std::string_view function_of(std::string_view label) {
    const size_t paren = label.rfind(" (");
    return paren == std::string_view::npos ? label : label.substr(0, paren);
}

}  // namespace

void view::draw_flame() {
    flame_state& f = panels_->flame;
    int source = static_cast<int>(f.source);
    ImGui::RadioButton("at the moment", &source, static_cast<int>(flame_source::moment));
    ImGui::SameLine();
    ImGui::RadioButton("at the peak", &source, static_cast<int>(flame_source::peak));
    ImGui::SameLine();
    ImGui::RadioButton(range_ ? "worst over the range" : "worst over the trace", &source,
                       static_cast<int>(flame_source::range));
    ImGui::SameLine();
    ImGui::RadioButton(range_ ? "allocated in the range, live at its end"
                              : "allocated in the trace, live at its end",
                       &source, static_cast<int>(flame_source::range_allocated));
    f.source = static_cast<flame_source>(source);
    ImGui::SameLine();
    ImGui::Checkbox("include pending frees", &f.active);
    ImGui::SameLine();
    ImGui::Checkbox("icicle", &f.icicle);
    ImGui::SameLine();
    if (ImGui::SmallButton("reset zoom")) {
        f.zoom = 0;
    }

    flame_state::key want{device_index_, f.source, 0, 0, f.active};
    if (f.source == flame_source::moment) {
        want.first = moment_;
    } else if (f.source == flame_source::range || f.source == flame_source::range_allocated) {
        want.first = range_ ? range_->first : 0;
        want.last = range_ ? range_->second : model().event_count();
    }
    if (f.pending.valid() &&
        f.pending.wait_for(std::chrono::seconds(0)) == std::future_status::ready) {
        const std::vector<std::string> zoom_path =
            f.graph.nodes.empty() ? std::vector<std::string>{} : path_of(f.graph.nodes, f.zoom);
        f.graph = f.pending.get();
        f.shown_key = f.pending_key;
        f.max_depth = deepest(f.graph.nodes);
        f.zoom = f.graph.nodes.empty() ? 0 : find_path(f.graph.nodes, zoom_path);
        f.match_text.clear();
        f.node_match.clear();
    }
    if (!f.pending.valid() && f.shown_key != want) {
        const analysis::device_model m = model();
        const auto measure =
            want.active ? analysis::live_measure::active : analysis::live_measure::allocated;
        f.pending_key = want;
        f.pending = std::async(std::launch::async, [m, want, measure] {
            switch (want.source) {
                case flame_source::moment:
                    return analysis::flame_at(m, want.first, measure);
                case flame_source::peak:
                    return analysis::flame_at_peak(m, measure);
                case flame_source::range:
                    return analysis::flame_over_range(m, want.first, want.last, measure);
                case flame_source::range_allocated:
                    return analysis::flame_allocated_in_range(m, want.first, want.last, measure);
            }
            return analysis::flame_graph{};
        });
    }
    if (f.graph.nodes.empty()) {
        ImGui::TextDisabled("computing the flame graph...");
        return;
    }

    const auto& nodes = f.graph.nodes;
    ImGui::Text("%s %s in %s blocks", format_bytes(f.graph.total()).c_str(),
                f.shown_key && f.shown_key->source == flame_source::range_allocated
                    ? "allocated in the range and live at its end"
                : f.shown_key && f.shown_key->source == flame_source::range
                    ? "at each stack's worst"
                    : "live",
                format_count(nodes[0].blocks).c_str());
    if (f.pending.valid() || f.shown_key != want) {
        ImGui::SameLine();
        ImGui::TextDisabled("(updating...)");
    }
    ImGui::SameLine();
    ImGui::TextDisabled("click: zoom  search highlights frames");

    if (searching() && f.match_text != search_) {
        f.match_text = search_;
        const std::string needle = lowercase(search_);
        f.node_match.resize(nodes.size());
        for (size_t i = 0; i < nodes.size(); ++i) {
            f.node_match[i] = lowercase(nodes[i].name).find(needle) != std::string::npos;
        }
    }
    const bool highlight = searching() && f.node_match.size() == nodes.size();
    const std::hash<std::string_view> hash;
    const flame_canvas_result r = draw_flame_canvas(
        "##flame", nodes, f.zoom, f.max_depth, f.icicle, [&](uint32_t i) { return nodes[i].bytes; },
        [&](uint32_t i) {
            const ImU32 c = palette::for_key(hash(function_of(nodes[i].name)));
            if (highlight) {
                return f.node_match[i] ? palette::selection : palette::shade(c, 0.4f);
            }
            return c;
        });
    if (r.hovered) {
        const analysis::flame_node& n = nodes[*r.hovered];
        ImGui::BeginTooltip();
        ImGui::TextUnformatted(n.name.c_str());
        ImGui::Separator();
        ImGui::Text("%s (%.1f%%) in %s blocks", format_bytes(n.bytes).c_str(),
                    100.0 * static_cast<double>(n.bytes) /
                        static_cast<double>(std::max<uint64_t>(1, f.graph.total())),
                    format_count(n.blocks).c_str());
        ImGui::Text("self %s", format_bytes(n.self_bytes).c_str());
        ImGui::EndTooltip();
    }
    if (r.clicked) {
        f.zoom = *r.clicked;
    }
}

}  // namespace memtrail::viewer

#pragma once
// Draws a flame graph (root at the bottom) or an icicle (root at the top) for any node type
// with name, parent, depth and children: the flame view's analysis::flame_graph and the
// compare view's analysis::flame_diff share it.
//
// The zoomed node fills the width, its ancestors are drawn full width, and a subtree narrower
// than half a pixel is not visited, so a row never holds more than two items per pixel.

#include <imgui.h>

#include <algorithm>
#include <cstdint>
#include <optional>
#include <vector>

namespace memtrail::viewer {

struct flame_canvas_result {
    std::optional<uint32_t> hovered;
    std::optional<uint32_t> clicked;
};

inline constexpr float flame_row_height = 20.0f;

// `width_of(i)` is node i's value (it must not exceed its parent's), `color_of(i)` its colour.
// Draws into a child window that scrolls vertically when the graph is deeper than the space.
template <class Node, class WidthOf, class ColorOf>
flame_canvas_result draw_flame_canvas(const char* id, const std::vector<Node>& nodes, uint32_t zoom,
                                      uint32_t max_depth, bool icicle, WidthOf width_of,
                                      ColorOf color_of) {
    flame_canvas_result result;
    if (nodes.empty()) {
        return result;
    }
    ImGui::BeginChild(id, ImVec2(0, 0), false, ImGuiWindowFlags_HorizontalScrollbar);
    const float width = std::max(16.0f, ImGui::GetContentRegionAvail().x);
    const float height = static_cast<float>(max_depth + 1) * flame_row_height;
    const ImVec2 origin = ImGui::GetCursorScreenPos();
    const float visible = ImGui::GetWindowHeight();
    // A flame graph grows up from the bottom of the visible area when it fits.
    const float top = icicle ? origin.y : origin.y + std::max(0.0f, visible - height - 4);
    ImGui::InvisibleButton("##canvas", ImVec2(width, std::max(height, visible - 4)));
    const bool canvas_hovered = ImGui::IsItemHovered();
    const bool clicked = ImGui::IsItemClicked(ImGuiMouseButton_Left);
    const ImVec2 mouse = ImGui::GetIO().MousePos;
    ImDrawList* draw = ImGui::GetWindowDrawList();
    // Rows scrolled out of the child window are skipped.
    const float clip_top = draw->GetClipRectMin().y;
    const float clip_bottom = draw->GetClipRectMax().y;

    auto row_y = [&](uint32_t depth) {
        return icicle ? top + static_cast<float>(depth) * flame_row_height
                      : top + static_cast<float>(max_depth - depth) * flame_row_height;
    };
    auto draw_node = [&](uint32_t i, float x0, float x1) {
        const float y0 = row_y(nodes[i].depth);
        const float y1 = y0 + flame_row_height - 1;
        if (y1 < clip_top || y0 > clip_bottom) {
            return;
        }
        const ImU32 color = color_of(i);
        draw->AddRectFilled(ImVec2(x0, y0), ImVec2(std::max(x0 + 1, x1 - 1), y1), color);
        if (x1 - x0 > 24) {
            const ImVec4 text_clip(x0 + 2, y0, x1 - 3, y1);
            draw->AddText(ImGui::GetFont(), ImGui::GetFontSize(), ImVec2(x0 + 3, y0 + 3),
                          IM_COL32(16, 16, 16, 255), nodes[i].name.c_str(), nullptr, 0.0f,
                          &text_clip);
        }
        if (canvas_hovered && mouse.x >= x0 && mouse.x < x1 && mouse.y >= y0 && mouse.y < y1) {
            result.hovered = i;
        }
    };

    // The zoomed node's ancestors span the width.
    for (uint32_t a = zoom; a != 0;) {
        a = nodes[a].parent;
        draw_node(a, origin.x, origin.x + width);
    }
    const double zoom_width = std::max(1.0, static_cast<double>(width_of(zoom)));
    struct pending {
        uint32_t node;
        float x0;
    };
    std::vector<pending> stack{{zoom, origin.x}};
    while (!stack.empty()) {
        const pending p = stack.back();
        stack.pop_back();
        const float w =
            static_cast<float>(static_cast<double>(width_of(p.node)) / zoom_width * width);
        draw_node(p.node, p.x0, p.x0 + w);
        float child_x = p.x0;
        for (const uint32_t child : nodes[p.node].children) {
            const float cw =
                static_cast<float>(static_cast<double>(width_of(child)) / zoom_width * width);
            if (cw >= 0.5f) {
                stack.push_back({child, child_x});
            }
            child_x += cw;
        }
    }
    if (clicked && result.hovered) {
        result.clicked = result.hovered;
    }
    ImGui::EndChild();
    return result;
}

}  // namespace memtrail::viewer

#include "detail/palette.hpp"

#include <algorithm>
#include <cmath>
#include <iterator>

namespace memtrail::viewer::palette {

ImU32 for_key(uint64_t key) {
    // splitmix64 finaliser: neighbouring ids get unrelated hues.
    key += 0x9e3779b97f4a7c15ull;
    key = (key ^ (key >> 30)) * 0xbf58476d1ce4e5b9ull;
    key = (key ^ (key >> 27)) * 0x94d049bb133111ebull;
    key ^= key >> 31;
    const float hue = static_cast<float>(key % 360) / 360.0f;
    const float saturation = 0.45f + static_cast<float>((key >> 16) % 20) / 100.0f;
    const float value = 0.70f + static_cast<float>((key >> 24) % 20) / 100.0f;
    float r = 0;
    float g = 0;
    float b = 0;
    ImGui::ColorConvertHSVtoRGB(hue, saturation, value, r, g, b);
    return ImGui::ColorConvertFloat4ToU32(ImVec4(r, g, b, 1.0f));
}

ImU32 for_category(size_t category) {
    static constexpr ImU32 colors[] = {
        IM_COL32(84, 132, 222, 255),   // parameter
        IM_COL32(150, 104, 220, 255),  // optimizer_state
        IM_COL32(60, 186, 170, 255),   // gradient
        IM_COL32(232, 140, 60, 255),   // activation
        IM_COL32(222, 200, 84, 255),   // temporary
        IM_COL32(110, 190, 90, 255),   // input
        IM_COL32(214, 96, 120, 255),   // autograd_detail
        IM_COL32(240, 150, 200, 255),  // kv_cache
        IM_COL32(176, 140, 100, 255),  // workspace
        IM_COL32(200, 230, 110, 255),  // collective
        IM_COL32(112, 116, 128, 255),  // unknown
    };
    return colors[std::min(category, std::size(colors) - 1)];
}

ImU32 for_rank(int rank) {
    // Golden-ratio steps around the hue circle: any few consecutive ranks stay far apart.
    const float turns = 0.58f + 0.618034f * static_cast<float>(rank);
    float r = 0;
    float g = 0;
    float b = 0;
    ImGui::ColorConvertHSVtoRGB(turns - std::floor(turns), 0.62f, 0.95f, r, g, b);
    return ImGui::ColorConvertFloat4ToU32(ImVec4(r, g, b, 1.0f));
}

ImU32 shade(ImU32 color, float factor) {
    ImVec4 c = ImGui::ColorConvertU32ToFloat4(color);
    c.x = std::clamp(c.x * factor, 0.0f, 1.0f);
    c.y = std::clamp(c.y * factor, 0.0f, 1.0f);
    c.z = std::clamp(c.z * factor, 0.0f, 1.0f);
    return ImGui::ColorConvertFloat4ToU32(c);
}

}  // namespace memtrail::viewer::palette

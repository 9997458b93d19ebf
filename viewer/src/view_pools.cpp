// Private pools: which pool each segment belongs to (from the snapshot's segments), and the
// filter the segment and timeline views share: all pools, the default pools, or one private pool
// (a CUDA graph's, a torch.cuda.MemPool's).

#include <algorithm>
#include <string>
#include <vector>

#include "detail/view_panels.hpp"

namespace memtrail::viewer {

const analysis::segment_pools& view::pools_state::of(const view& v) {
    if (!valid || device_index != v.device_index_) {
        pools = analysis::segment_pools(v.model().source(), v.model().device());
        filter = {};
        device_index = v.device_index_;
        valid = true;
    }
    return pools;
}

bool view::pools_state::draw_filter(const view& v) {
    const analysis::segment_pools& known = of(v);
    if (known.private_pools().empty()) {
        return false;
    }
    using kind = analysis::pool_filter::kind;
    const auto label = [](const analysis::pool_filter& f) {
        switch (f.shown) {
            case kind::all:
                return std::string("all pools");
            case kind::default_pools:
                return std::string("default pools");
            case kind::one_private:
                return "private pool " + analysis::pool_name(f.pool) + " (" +
                       analysis::pool_kind(f.pool) + ")";
        }
        return std::string();
    };
    std::vector<analysis::pool_filter> choices = {{kind::all, {}}, {kind::default_pools, {}}};
    for (const analysis::segment_pool& pool : known.private_pools()) {
        choices.push_back({kind::one_private, pool});
    }
    // Wide enough for its longest choice, and on a line of its own when the rest of the line
    // cannot hold it and its name: neither is ever cut.
    const ImGuiStyle& style = ImGui::GetStyle();
    float combo_width = 0;
    for (const analysis::pool_filter& choice : choices) {
        combo_width = std::max(combo_width, ImGui::CalcTextSize(label(choice).c_str()).x);
    }
    combo_width += 2 * style.FramePadding.x + ImGui::GetFrameHeight();
    if (ImGui::GetContentRegionAvail().x <
        combo_width + style.ItemInnerSpacing.x + ImGui::CalcTextSize("pool").x) {
        ImGui::NewLine();
    }
    bool changed = false;
    ImGui::SetNextItemWidth(combo_width);
    if (ImGui::BeginCombo("pool", label(filter).c_str())) {
        for (const analysis::pool_filter& choice : choices) {
            const bool selected = choice.shown == filter.shown && choice.pool == filter.pool;
            if (ImGui::Selectable(label(choice).c_str(), selected) && !selected) {
                filter = choice;
                changed = true;
            }
        }
        ImGui::EndCombo();
    }
    if (ImGui::IsItemHovered()) {
        ImGui::SetTooltip(
            "Private pools hold the memory of CUDA graphs and torch.cuda.MemPool.\n"
            "A segment's pool is known while the snapshot still holds it; one given back\n"
            "earlier takes the pool of its stream's other segments when they share one\n"
            "(marked ~), and shows under \"all pools\" only otherwise.");
    }
    return changed;
}

}  // namespace memtrail::viewer

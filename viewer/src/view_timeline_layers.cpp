// The timeline's layers: memory stacked by category or by allocation stack, or the segments
// over time with the free space inside them; every allocation adds its bytes to its layer in
// every pixel column (analysis/stacked_timeline.hpp), computed in the background. Also the
// controls that pick the stacking and its detail, and the legend.
//
// Index of this file:
// [SECTION] controls and legend
// [SECTION] background computation
// [SECTION] drawing and tooltips

#include <algorithm>
#include <chrono>
#include <cmath>
#include <future>
#include <iterator>
#include <string>
#include <string_view>

#include "detail/format.hpp"
#include "detail/palette.hpp"
#include "detail/view_panels.hpp"

namespace memtrail::viewer {

namespace {

constexpr const char* stacking_names[] = {"category", "stack", "allocation", "segment"};

// A segment's colour: the pool picks the hue family, the stream a shade of it.
ImU32 segment_color(const analysis::segment_life& seg) {
    const ImU32 base = seg.is_large ? IM_COL32(90, 140, 215, 255) : IM_COL32(110, 185, 120, 255);
    return palette::shade(base, 0.8f + 0.1f * static_cast<float>(seg.stream % 4));
}

constexpr ImU32 rest_color = IM_COL32(96, 104, 120, 255);

// A note in the disabled colour that wraps at the window's edge instead of running past it.
template <typename... Args>
void note(const char* format, Args... args) {
    ImGui::PushStyleColor(ImGuiCol_Text, ImGui::GetStyleColorVec4(ImGuiCol_TextDisabled));
    ImGui::TextWrapped(format, args...);
    ImGui::PopStyleColor();
}

void legend_swatch(ImU32 color) {
    const float side = ImGui::GetTextLineHeight() - 2;
    ImGui::ColorButton("##swatch", ImGui::ColorConvertU32ToFloat4(color),
                       ImGuiColorEditFlags_NoTooltip | ImGuiColorEditFlags_NoDragDrop,
                       ImVec2(side, side));
    ImGui::SameLine(0, 4);
}

}  // namespace

//-------------------------------------------------------------------------------------------------
// [SECTION] controls and legend
//-------------------------------------------------------------------------------------------------

bool view::stack_timeline_by(std::string_view name) {
    for (size_t i = 0; i < std::size(stacking_names); ++i) {
        if (name == stacking_names[i]) {
            panels_->timeline.mode = static_cast<timeline_state::stacking>(i);
            panels_->timeline.mode_chosen = true;
            return true;
        }
    }
    return false;
}

void view::timeline_state::draw_mode_controls(view& v) {
    const bool known = v.dev().categories && v.dev().categories->any_known();
    if (!mode_chosen) {
        mode = known ? stacking::category : stacking::allocation;
        mode_chosen = true;
    }
    ImGui::TextUnformatted("stack by");
    for (size_t i = 0; i < std::size(stacking_names); ++i) {
        ImGui::SameLine();
        int chosen = static_cast<int>(mode);
        if (ImGui::RadioButton(stacking_names[i], &chosen, static_cast<int>(i))) {
            mode = static_cast<stacking>(chosen);
        }
    }
    if (mode == stacking::stack || mode == stacking::allocation) {
        ImGui::SameLine();
        ImGui::SetNextItemWidth(160);
        if (mode == stacking::stack) {
            ImGui::SliderInt("detail: stacks coloured", &stack_layers, 1, 256, "%d",
                             ImGuiSliderFlags_Logarithmic);
        } else {
            ImGui::SliderInt("detail: largest allocations", &band_count, 1, 2000, "%d",
                             ImGuiSliderFlags_Logarithmic);
        }
    }
}

void view::timeline_state::draw_legend(view& v) {
    switch (mode) {
        case stacking::category: {
            if (!v.dev().categories) {
                break;
            }
            timeline_state::legend_key_type key{v.device_index_, v.moment_, std::nullopt};
            if (v.range_) {
                key.position = std::min(v.range_->second, v.model().event_count());
                key.since = std::min(v.range_->first, v.model().event_count());
            }
            if (legend_key != key) {
                legend = analysis::categories_at(v.model(), *v.dev().categories, key.position);
                if (key.since) {
                    legend_since =
                        analysis::categories_at(v.model(), *v.dev().categories, *key.since);
                }
                legend_key = key;
            }
            const float right = ImGui::GetCursorScreenPos().x + ImGui::GetContentRegionAvail().x;
            for (size_t c = 0; c < analysis::memory_category_count; ++c) {
                ImGui::PushID(static_cast<int>(c));
                const auto& t = legend.totals[c];
                std::string label =
                    std::string(analysis::category_name(analysis::memory_category(c))) + " " +
                    format_bytes(t.bytes);
                const int64_t change = key.since
                                           ? static_cast<int64_t>(t.bytes) -
                                                 static_cast<int64_t>(legend_since.totals[c].bytes)
                                           : 0;
                if (key.since) {
                    label += " (" + format_bytes_delta(change) + ")";
                }
                // Items that would not fit go on the next line rather than past the edge.
                const float item =
                    ImGui::GetTextLineHeight() + 4 + ImGui::CalcTextSize(label.c_str()).x;
                if (c != 0 && ImGui::GetItemRectMax().x + 14 + item <= right) {
                    ImGui::SameLine(0, 14);
                }
                legend_swatch(palette::for_category(c));
                ImGui::TextUnformatted(label.c_str());
                if (ImGui::IsItemHovered()) {
                    ImGui::SetTooltip(
                        "%s: %s\n%s: %s in %zu blocks, confidence %.2f%s%s",
                        analysis::category_name(analysis::memory_category(c)).data(),
                        analysis::category_description(analysis::memory_category(c)).data(),
                        key.since ? "at the end of the selected range" : "at the selected moment",
                        format_bytes(t.bytes).c_str(), t.blocks, t.confidence,
                        key.since ? "\nchange over the range: " : "",
                        key.since ? format_bytes_delta(change).c_str() : "");
                }
                ImGui::PopID();
            }
            note(key.since ? "bytes at the end of the selected range (change over the range); "
                             "the plot shows each pixel's highest moment. Training steps from %s."
                           : "bytes at the selected moment; the plot shows each pixel's highest "
                             "moment. Training steps from %s.",
                 analysis::step_source_name(v.dev().categories->steps().source).data());
            return;
        }
        case stacking::stack:
            legend_swatch(rest_color);
            note(
                "the other stacks;  each colour is one of the %d allocation "
                "stacks holding the most memory in view (hover for its frames)",
                stack_layers);
            return;
        case stacking::allocation:
            note(
                "grey: %s bytes (dark: the least, light: the most in a pixel)  "
                "top line: reserved  %scoloured: the %d largest allocations",
                include_pending ? "active" : "allocated",
                include_pending ? "blue line: allocated  " : "", band_count);
            return;
        case stacking::segment:
            legend_swatch(IM_COL32(90, 140, 215, 255));
            ImGui::TextUnformatted("large pool");
            ImGui::SameLine(0, 14);
            legend_swatch(IM_COL32(110, 185, 120, 255));
            ImGui::TextUnformatted("small pool");
            ImGui::SameLine(0, 14);
            note(
                "one band per segment, grouped by pool and stream (shade); bright: "
                "%s, dark: free inside it",
                include_pending ? "allocated or pending free" : "allocated");
            return;
    }
    ImGui::NewLine();
}

//-------------------------------------------------------------------------------------------------
// [SECTION] background computation
//-------------------------------------------------------------------------------------------------

bool view::timeline_state::layers_usable(const view& v) const {
    return mode != stacking::allocation && layers_shown &&
           layers_shown->device_index == v.device_index_ && layers_shown->mode == mode &&
           layers_shown->include_pending == include_pending && layers_shown->by_time == by_time &&
           !layers.axis_spans.empty();
}

void view::timeline_state::request_layers(view& v, int width) {
    if (mode == stacking::allocation || columns.empty() || !v.dev().categories) {
        return;
    }
    const layers_key want{v.device_index_,
                          columns.front().first,
                          columns.back().last,
                          width,
                          by_time,
                          mode,
                          mode == stacking::stack ? stack_layers : 0,
                          include_pending};
    if (layers_job.valid() || layers_shown == want) {
        return;
    }
    std::vector<analysis::column_span> spans;
    std::vector<std::pair<double, double>> axis_spans;
    const double span = cached_last - cached_first;
    for (const column& c : columns) {
        spans.push_back({c.first, std::max(c.last, c.first + 1)});
        axis_spans.emplace_back(cached_first + c.x0 / width * span,
                                cached_first + c.x1 / width * span);
    }
    layers_wanted = want;
    layers_job = std::async(std::launch::async, [doc = v.shared_doc(), device = v.device_index_,
                                                 want, spans = std::move(spans),
                                                 axis_spans = std::move(axis_spans)]() mutable {
        const device_document& d = doc->devices[device];
        layers_result out;
        out.axis_spans = std::move(axis_spans);
        if (want.mode == stacking::segment) {
            out.segments =
                analysis::segments_over_time(d.model, *d.categories, spans, want.include_pending);
        } else {
            out.stacked = analysis::stack_allocations(
                d.model, *d.categories,
                want.mode == stacking::category ? analysis::stack_key::category
                                                : analysis::stack_key::stack,
                spans, want.include_pending, static_cast<size_t>(want.detail));
        }
        return out;
    });
}

//-------------------------------------------------------------------------------------------------
// [SECTION] drawing and tooltips
//-------------------------------------------------------------------------------------------------

std::optional<view::timeline_state::layer_hit> view::timeline_state::draw_layers(view& v,
                                                                                 const frame& f) {
    ImDrawList* draw = ImGui::GetWindowDrawList();
    auto column_x = [&](size_t c) {
        const float x0 = std::round(x_of(f, layers.axis_spans[c].first));
        return std::pair(x0, std::max(std::round(x_of(f, layers.axis_spans[c].second)), x0 + 1));
    };
    // A layer is one rectangle per run of columns where it covers the same pixels, so flat
    // stretches (weights, optimizer state) cost one item however many columns they span, and a
    // layer thinner than a pixel costs none.
    struct run {
        float x0 = 0, x1 = 0, top = 0, bottom = 0, used = 0;
        size_t last_column = 0;
        bool open = false;
    };
    const bool segments = mode == stacking::segment;
    std::vector<run> runs(segments ? layers.segments.segments.size() : layers.stacked.layers());
    auto flush = [&](size_t i) {
        run& r = runs[i];
        if (!r.open) {
            return;
        }
        r.open = false;
        if (segments) {
            const ImU32 color = segment_color(layers.segments.segments[i]);
            draw->AddRectFilled(ImVec2(r.x0, r.top), ImVec2(r.x1, r.used),
                                palette::shade(color, 0.3f));
            draw->AddRectFilled(ImVec2(r.x0, r.used), ImVec2(r.x1, r.bottom), color);
            if (r.bottom - r.top > 3) {
                draw->AddLine(ImVec2(r.x0, r.top), ImVec2(r.x1, r.top), IM_COL32(20, 21, 25, 255));
            }
            return;
        }
        const auto& t = layers.stacked;
        ImU32 color = rest_color;
        if (i < t.keys.size()) {
            const bool by_stack = mode == stacking::stack;
            color = by_stack ? palette::for_key(t.keys[i]) : palette::for_category(t.keys[i]);
            if (by_stack && v.searching() && !v.stack_matches(t.keys[i])) {
                color = palette::shade(color, 0.35f);
            }
        }
        draw->AddRectFilled(ImVec2(r.x0, r.top), ImVec2(r.x1, r.bottom), color);
    };
    auto extend = [&](size_t i, size_t c, float x0, float x1, float top, float bottom, float used) {
        run& r = runs[i];
        if (r.open && r.last_column + 1 == c && r.x1 == x0 && r.top == top && r.bottom == bottom &&
            r.used == used) {
            r.x1 = x1;
        } else {
            flush(i);
            r = {x0, x1, top, bottom, used, c, true};
        }
        r.last_column = c;
    };
    auto y_pixel = [&](uint64_t bytes) { return std::round(y_of(f, bytes)); };

    const size_t column_count = layers.axis_spans.size();
    for (size_t c = 0; c < column_count; ++c) {
        const auto [x0, x1] = column_x(c);
        if (x1 < f.plot_origin.x || x0 > f.plot_end.x) {
            continue;
        }
        uint64_t offset = 0;
        if (segments) {
            for (const auto& cell : layers.segments.columns[c]) {
                const uint64_t size = layers.segments.segments[cell.segment].size;
                extend(cell.segment, c, x0, x1, y_pixel(offset + size), y_pixel(offset),
                       y_pixel(offset + cell.allocated));
                offset += size;
            }
            continue;
        }
        for (size_t k = 0; k < layers.stacked.layers(); ++k) {
            const uint64_t bytes = layers.stacked.at(c, k);
            const float top = y_pixel(offset + bytes);
            const float bottom = y_pixel(offset);
            if (top < bottom) {
                extend(k, c, x0, x1, top, bottom, 0);
            }
            offset += bytes;
        }
    }
    for (size_t i = 0; i < runs.size(); ++i) {
        flush(i);
    }
    return hit_test(f);
}

std::optional<view::timeline_state::layer_hit> view::timeline_state::hit_test(
    const frame& f) const {
    const ImVec2 mouse = ImGui::GetIO().MousePos;
    if (!ImGui::IsMouseHoveringRect(f.plot_origin, f.plot_end)) {
        return std::nullopt;
    }
    // The column under the mouse, then the layer or segment at its height.
    const double axis = view_first + static_cast<double>(mouse.x - f.origin.x) / f.width * f.span;
    const auto& spans = layers.axis_spans;
    const auto it = std::upper_bound(spans.begin(), spans.end(), axis,
                                     [](double a, const auto& span) { return a < span.first; });
    if (it == spans.begin() || axis >= (it - 1)->second) {
        return std::nullopt;
    }
    const auto c = static_cast<size_t>(it - spans.begin() - 1);
    uint64_t offset = 0;
    if (mode == stacking::segment) {
        const auto& cells = layers.segments.columns[c];
        for (size_t i = 0; i < cells.size(); ++i) {
            offset += layers.segments.segments[cells[i].segment].size;
            if (mouse.y >= y_of(f, offset)) {
                return layer_hit{c, i};
            }
        }
        return std::nullopt;
    }
    for (size_t k = 0; k < layers.stacked.layers(); ++k) {
        offset += layers.stacked.at(c, k);
        if (layers.stacked.at(c, k) != 0 && mouse.y >= y_of(f, offset)) {
            return layer_hit{c, k};
        }
    }
    return std::nullopt;
}

void view::timeline_state::layer_tooltip(view& v, const layer_hit& hit) {
    if (mode == stacking::segment) {
        const auto& t = layers.segments;
        const auto& cell = t.columns[hit.column][hit.layer];
        const analysis::segment_life& seg = t.segments[cell.segment];
        ImGui::Text("segment 0x%llx, %s pool, %s", static_cast<unsigned long long>(seg.address),
                    seg.is_large ? "large" : "small",
                    v.dev().stream_names.name_with_handle(seg.stream).c_str());
        ImGui::Text("size %s: %s allocated, %s free", format_bytes(seg.size).c_str(),
                    format_bytes(cell.allocated).c_str(),
                    format_bytes(seg.size - std::min(seg.size, cell.allocated)).c_str());
        ImGui::TextDisabled("at %s", v.axis_label(v.axis_of(t.positions[hit.column])).c_str());
        return;
    }
    const auto& t = layers.stacked;
    const size_t position = t.positions[hit.column];
    uint64_t total = 0;
    for (size_t k = 0; k < t.layers(); ++k) {
        total += t.at(hit.column, k);
    }
    const uint64_t bytes = t.at(hit.column, hit.layer);
    const double share =
        total == 0 ? 0.0 : 100.0 * static_cast<double>(bytes) / static_cast<double>(total);
    if (hit.layer >= t.keys.size()) {
        ImGui::Text("the other stacks: %s (%.1f%%)", format_bytes(bytes).c_str(), share);
    } else if (mode == stacking::category) {
        const auto category = analysis::memory_category(t.keys[hit.layer]);
        ImGui::Text("%s: %s (%.1f%%)", analysis::category_name(category).data(),
                    format_bytes(bytes).c_str(), share);
        ImGui::TextDisabled("%s", analysis::category_description(category).data());
    } else {
        ImGui::Text("%s (%.1f%%) from this stack", format_bytes(bytes).c_str(), share);
        v.stack_tooltip(t.keys[hit.layer], 12);
    }
    ImGui::TextDisabled("at %s, the column's highest moment",
                        v.axis_label(v.axis_of(position)).c_str());
}

}  // namespace memtrail::viewer

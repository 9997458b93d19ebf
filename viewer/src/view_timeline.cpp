// The timeline: allocated and reserved memory over the trace, stacked by what the memory is for
// (categories), by allocation stack, by segment, or with the largest allocations as bands of
// their own (PyTorch memory_viz's Active Memory Timeline); annotation ranges, OOM markers, and
// the overview strip above every feature tab. The layers and the legend are in
// view_timeline_layers.cpp.
//
// Everything is drawn per pixel column: the curves come as one min/max bucket per column, and
// a band is one rectangle per run of columns where it sits at the same height, so a frame never
// draws more than a few items per pixel column however long the trace.
//
// Index of this file:
// [SECTION] geometry helpers
// [SECTION] overview strip
// [SECTION] cached geometry
// [SECTION] timeline

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <future>

#include "detail/format.hpp"
#include "detail/palette.hpp"
#include "detail/view_panels.hpp"
#include "memtrail/analysis/entry_tags.hpp"

namespace memtrail::viewer {

//-------------------------------------------------------------------------------------------------
// [SECTION] geometry helpers
//-------------------------------------------------------------------------------------------------

namespace {

constexpr float lane_height = 15.0f;
constexpr int max_lanes = 4;

// Below the plot: the tick marks and one line of labels, so they never reach what follows.
float axis_height() {
    return ImGui::GetTextLineHeight() + 8.0f;
}

ImU32 range_color(range_source source) {
    switch (source) {
        case range_source::annotation:
            return palette::annotation;
        case range_source::user_metadata:
            return palette::user_metadata_range;
        case range_source::compile_context:
            return palette::compile_context_range;
    }
    return palette::annotation;
}

// A lane's text: an annotation's name, a tag's value after what it is ("metadata: step 3").
std::string range_label(const snapshot::snapshot& source, const annotation_range& r) {
    const std::string_view name = source.string_at(r.name);
    switch (r.source) {
        case range_source::annotation:
            return std::string(name);
        case range_source::user_metadata:
            return std::string(analysis::tag_kind_name(analysis::tag_kind::user_metadata)) + ": " +
                   std::string(name);
        case range_source::compile_context:
            return std::string(analysis::tag_kind_name(analysis::tag_kind::compile_context)) +
                   ": " + std::string(name);
    }
    return std::string(name);
}

}  // namespace

//-------------------------------------------------------------------------------------------------
// [SECTION] overview strip
//-------------------------------------------------------------------------------------------------

void view::draw_overview(float height) {
    timeline_state& t = panels_->timeline;
    if (!t.view_set) {
        t.view_first = 0;
        t.view_last = axis_end();
        t.view_set = true;
    }
    const ImVec2 origin = ImGui::GetCursorScreenPos();
    const float width = std::max(16.0f, ImGui::GetContentRegionAvail().x);
    const int columns = static_cast<int>(width);
    const size_t count = model().event_count();
    if (t.overview_width != columns || t.overview_device != device_index_ ||
        t.overview_by_time != t.by_time) {
        const int64_t t0 = model().time_at(0);
        if (t.by_time) {
            const int64_t t1 = model().time_at(count) + 1;
            t.overview_reserved = analysis::buckets_by_time(model(), analysis::series::reserved, t0,
                                                            t1, static_cast<size_t>(columns));
            t.overview_allocated = analysis::buckets_by_time(model(), analysis::series::allocated,
                                                             t0, t1, static_cast<size_t>(columns));
        } else {
            t.overview_reserved = analysis::buckets_by_position(
                model(), analysis::series::reserved, 0, count + 1, static_cast<size_t>(columns));
            t.overview_allocated = analysis::buckets_by_position(
                model(), analysis::series::allocated, 0, count + 1, static_cast<size_t>(columns));
        }
        t.overview_width = columns;
        t.overview_device = device_index_;
        t.overview_by_time = t.by_time;
    }

    ImDrawList* draw = ImGui::GetWindowDrawList();
    const ImVec2 end(origin.x + width, origin.y + height);
    draw->AddRectFilled(origin, end, IM_COL32(24, 25, 30, 255));
    uint64_t top = 1;
    for (const analysis::curve_bucket& b : t.overview_reserved) {
        top = std::max(top, b.max);
    }
    const double total = axis_end();
    auto x_of = [&](double axis) { return origin.x + static_cast<float>(axis / total) * width; };
    auto y_of = [&](uint64_t bytes) {
        return end.y - static_cast<float>(static_cast<double>(bytes) / static_cast<double>(top)) *
                           (height - 2);
    };
    auto bucket_x = [&](size_t i, const analysis::curve_bucket& b, size_t n) {
        if (t.by_time) {
            const float w = width / static_cast<float>(n);
            return std::pair(origin.x + w * static_cast<float>(i),
                             origin.x + w * static_cast<float>(i + 1));
        }
        return std::pair(x_of(static_cast<double>(b.first)), x_of(static_cast<double>(b.last)));
    };
    for (size_t i = 0; i < t.overview_reserved.size(); ++i) {
        const auto [x0, x1] = bucket_x(i, t.overview_reserved[i], t.overview_reserved.size());
        draw->AddRectFilled(ImVec2(x0, y_of(t.overview_reserved[i].max)), ImVec2(x1, end.y),
                            palette::shade(palette::reserved, 0.45f));
    }
    for (size_t i = 0; i < t.overview_allocated.size(); ++i) {
        const auto [x0, x1] = bucket_x(i, t.overview_allocated[i], t.overview_allocated.size());
        draw->AddRectFilled(ImVec2(x0, y_of(t.overview_allocated[i].max)), ImVec2(x1, end.y),
                            palette::allocated);
    }
    float last_oom_x = -1;
    for (const size_t entry : dev().oom_entries) {
        const float x = std::floor(x_of(axis_of(entry + 1)));
        if (x != last_oom_x) {
            draw->AddLine(ImVec2(x, origin.y), ImVec2(x, end.y), palette::oom, 2.0f);
            last_oom_x = x;
        }
    }
    if (range_) {
        draw->AddRectFilled(ImVec2(x_of(axis_of(range_->first)), origin.y),
                            ImVec2(x_of(axis_of(range_->second)) + 1, end.y), palette::range);
    }
    draw->AddRect(ImVec2(x_of(t.view_first), origin.y), ImVec2(x_of(t.view_last) + 1, end.y),
                  IM_COL32(255, 255, 255, 160));
    const float moment_x = x_of(axis_of(moment_));
    draw->AddLine(ImVec2(moment_x, origin.y), ImVec2(moment_x, end.y), palette::selection, 1.5f);

    // Click or drag to centre the visible range there.
    ImGui::InvisibleButton("##overview", ImVec2(width, height));
    if (ImGui::IsItemActive()) {
        const double at = std::clamp(
            static_cast<double>(ImGui::GetIO().MousePos.x - origin.x) / width * total, 0.0, total);
        const double span = t.view_last - t.view_first;
        t.view_first = std::clamp(at - span / 2, 0.0, std::max(0.0, total - span));
        t.view_last = t.view_first + span;
    }
    if (ImGui::IsItemHovered()) {
        ImGui::SetTooltip("overview: click or drag to move the visible range");
    }
}

//-------------------------------------------------------------------------------------------------
// [SECTION] cached geometry
//-------------------------------------------------------------------------------------------------

void view::timeline_state::rebuild(view& v, int width) {
    columns.clear();
    bands.clear();
    const analysis::device_model m = v.model();  // a copy shares the model; the job keeps one
    const size_t count = m.event_count();
    const analysis::series curve =
        include_pending ? analysis::series::active : analysis::series::allocated;
    const double span = view_last - view_first;
    auto x_of = [&](double axis) { return static_cast<float>((axis - view_first) / span * width); };

    std::vector<analysis::curve_bucket> active;
    std::vector<analysis::curve_bucket> reserved;
    std::vector<analysis::curve_bucket> allocated;
    if (by_time) {
        const int64_t t0 = m.time_at(0);
        const int64_t first_ns = t0 + static_cast<int64_t>(view_first);
        const int64_t last_ns = std::max(first_ns + 1, t0 + static_cast<int64_t>(view_last));
        const auto buckets = static_cast<size_t>(width);
        active = analysis::buckets_by_time(m, curve, first_ns, last_ns, buckets);
        reserved =
            analysis::buckets_by_time(m, analysis::series::reserved, first_ns, last_ns, buckets);
        allocated =
            analysis::buckets_by_time(m, analysis::series::allocated, first_ns, last_ns, buckets);
    } else {
        const size_t first = v.position_of_axis(view_first);
        const size_t last = std::min(count + 1, v.position_of_axis(view_last) + 1);
        const auto buckets = static_cast<size_t>(width);
        active = analysis::buckets_by_position(m, curve, first, last, buckets);
        reserved =
            analysis::buckets_by_position(m, analysis::series::reserved, first, last, buckets);
        allocated =
            analysis::buckets_by_position(m, analysis::series::allocated, first, last, buckets);
    }
    y_max = 1;
    for (size_t i = 0; i < active.size(); ++i) {
        timeline_state::column c;
        if (by_time) {
            c.x0 = static_cast<float>(i);
            c.x1 = static_cast<float>(i + 1);
        } else {
            c.x0 = x_of(static_cast<double>(active[i].first));
            c.x1 = x_of(static_cast<double>(active[i].last));
        }
        c.first = active[i].first;
        c.last = active[i].last;
        c.active_min = active[i].min;
        c.active_max = active[i].max;
        c.reserved_min = reserved[i].min;
        c.reserved_max = reserved[i].max;
        c.allocated_max = allocated[i].max;
        y_max = std::max({y_max, c.reserved_max, c.active_max});
        columns.push_back(c);
    }
    if (columns.empty()) {
        return;
    }

    // The largest allocations, stacked in allocation order like memory_viz: when one below is
    // freed, those above move down.
    const auto& lifetimes = m.lifetimes();
    const largest_key want{v.device_index_, columns.front().first, columns.back().last,
                           include_pending, static_cast<size_t>(band_count)};
    if (mode == stacking::allocation && !largest_job.valid() && largest_shown != want) {
        largest_wanted = want;
        largest_job = std::async(std::launch::async, [m, want] {
            std::vector<size_t> chosen =
                analysis::largest_allocations(m, want.first, want.last, want.count, 1,
                                              want.include_pending)
                    .largest;
            const auto& lives = m.lifetimes();
            std::sort(chosen.begin(), chosen.end(), [&](size_t a, size_t b) {
                return lives[a].begin != lives[b].begin ? lives[a].begin < lives[b].begin : a < b;
            });
            return chosen;
        });
    }
    // Bands chosen for another device or measure do not apply; for another range they do.
    static const std::vector<size_t> none;
    const bool usable = mode == stacking::allocation && largest_shown &&
                        largest_shown->device_index == v.device_index_ &&
                        largest_shown->include_pending == include_pending;
    const std::vector<size_t>& stacked = usable ? largest : none;
    // The pool filter keeps the bands of allocations in segments of the chosen pool.
    const analysis::segment_pools& pools = v.panels_->pools.of(v);
    const analysis::pool_filter& pool_filter = v.panels_->pools.filter;
    std::vector<int> open_band(stacked.size(), -1);
    std::vector<size_t> open_column(stacked.size(), 0);
    for (size_t ci = 0; ci < columns.size(); ++ci) {
        const timeline_state::column& c = columns[ci];
        uint64_t offset = 0;
        for (size_t k = 0; k < stacked.size(); ++k) {
            const analysis::allocation_lifetime& life = lifetimes[stacked[k]];
            const size_t until = include_pending ? life.released : life.end;
            if (life.begin >= c.last || until <= c.first ||
                !pool_filter.accepts(pools.pool_holding(life.address))) {
                continue;
            }
            const uint64_t bottom = offset;
            offset += life.size;
            const int b = open_band[k];
            if (b >= 0 && open_column[k] + 1 == ci &&
                bands[static_cast<size_t>(b)].bottom == bottom) {
                bands[static_cast<size_t>(b)].x1 = c.x1;
            } else {
                open_band[k] = static_cast<int>(bands.size());
                bands.push_back({stacked[k], c.x0, c.x1, bottom, offset});
            }
            open_column[k] = ci;
        }
        y_max = std::max(y_max, offset);
    }
    y_max = y_max + y_max / 16;
}

//-------------------------------------------------------------------------------------------------
// [SECTION] timeline
//-------------------------------------------------------------------------------------------------

void view::draw_timeline() {
    timeline_state& t = panels_->timeline;
    t.draw_controls(*this);
    t.draw_legend(*this);
    const timeline_state::frame f = t.layout(*this);
    t.update(*this, static_cast<int>(f.width));
    ImDrawList* draw = ImGui::GetWindowDrawList();
    draw->PushClipRect(f.origin, ImVec2(f.plot_end.x, f.plot_end.y + axis_height()), true);
    draw->AddRectFilled(f.plot_origin, f.plot_end, IM_COL32(20, 21, 25, 255));
    t.draw_lanes(*this, f);
    t.draw_grid(f, false);
    const std::optional<size_t> hovered_band = t.draw_plot(*this, f);
    const std::optional<timeline_state::layer_hit> hovered_layer =
        t.layers_usable(*this) ? t.draw_layers(*this, f) : std::nullopt;
    t.draw_marks(*this, f);
    t.draw_grid(f, true);
    draw->PopClipRect();
    t.handle_input(*this, f, hovered_band, hovered_layer);
}

float view::timeline_state::x_of(const frame& f, double axis) const {
    return f.origin.x + static_cast<float>((axis - view_first) / f.span * f.width);
}

float view::timeline_state::y_of(const frame& f, uint64_t bytes) const {
    return f.plot_end.y -
           static_cast<float>(static_cast<double>(bytes) / static_cast<double>(y_max)) *
               f.plot_height;
}

void view::timeline_state::draw_controls(view& v) {
    if (ImGui::Checkbox("wall clock", &by_time)) {
        view_set = false;
        view_first = 0;
        view_last = v.axis_end();
        view_set = true;
    }
    ImGui::SameLine();
    ImGui::Checkbox("include pending frees", &include_pending);
    ImGui::SameLine();
    if (ImGui::SmallButton("zoom to fit")) {
        view_first = 0;
        view_last = v.axis_end();
    }
    if (v.range_) {
        ImGui::SameLine();
        if (ImGui::SmallButton("zoom to range")) {
            view_first = v.axis_of(v.range_->first);
            view_last = std::max(view_first + 1, v.axis_of(v.range_->second + 1));
        }
    }
    ImGui::SameLine();
    if (v.panels_->pools.draw_filter(v)) {
        cached_first = -1;  // the bands change
    }
    ImGui::SameLine();
    ImGui::TextDisabled("wheel: zoom  drag: pan  shift/right drag: range  click: select");
    draw_mode_controls(v);
}

view::timeline_state::frame view::timeline_state::layout(const view& v) const {
    frame f;
    f.lane_count = std::min(max_lanes, static_cast<int>(v.dev().annotation_lanes.size()));
    const ImVec2 avail = ImGui::GetContentRegionAvail();
    f.width = std::max(32.0f, avail.x);
    f.lanes_height = static_cast<float>(f.lane_count) * lane_height;
    f.plot_height = std::max(40.0f, avail.y - f.lanes_height - axis_height());
    f.origin = ImGui::GetCursorScreenPos();
    f.plot_origin = ImVec2(f.origin.x, f.origin.y + f.lanes_height);
    f.plot_end = ImVec2(f.origin.x + f.width, f.plot_origin.y + f.plot_height);
    f.span = view_last - view_first;
    return f;
}

void view::timeline_state::update(view& v, int width) {
    // A finished choice of the largest allocations means new bands.
    bool adopted = false;
    if (largest_job.valid() &&
        largest_job.wait_for(std::chrono::seconds(0)) == std::future_status::ready) {
        largest = largest_job.get();
        largest_shown = largest_wanted;
        adopted = true;
    }
    if (layers_job.valid() &&
        layers_job.wait_for(std::chrono::seconds(0)) == std::future_status::ready) {
        layers = layers_job.get();
        layers_shown = layers_wanted;
    }
    if (cached_first != view_first || cached_last != view_last || cached_width != width ||
        cached_device != v.device_index_ || cached_by_time != by_time ||
        cached_pending != include_pending || cached_mode != mode ||
        cached_band_count != band_count || adopted) {
        rebuild(v, width);
        cached_first = view_first;
        cached_last = view_last;
        cached_width = width;
        cached_device = v.device_index_;
        cached_by_time = by_time;
        cached_pending = include_pending;
        cached_mode = mode;
        cached_band_count = band_count;
    }
    request_layers(v, width);
}

void view::timeline_state::draw_lanes(view& v, const frame& f) {
    const auto& lanes = v.dev().annotation_lanes;
    ImDrawList* draw = ImGui::GetWindowDrawList();
    // Annotation lanes: within a lane ranges do not overlap, so after drawing up to pixel x the
    // next range to look at is found by binary search, and a lane costs at most one item per
    // pixel.
    for (int lane = 0; lane < f.lane_count; ++lane) {
        const auto& ranges = lanes[static_cast<size_t>(lane)];
        const float y0 = f.origin.y + static_cast<float>(lane) * lane_height;
        size_t next_position = v.position_of_axis(view_first);
        auto it = std::lower_bound(ranges.begin(), ranges.end(), next_position,
                                   [](const annotation_range& r, size_t p) { return r.last < p; });
        while (it != ranges.end()) {
            const float x0 = std::max(f.origin.x, x_of(f, v.axis_of(it->first)));
            if (x0 > f.plot_end.x) {
                break;
            }
            const float x1 = std::min(f.plot_end.x, std::max(x0 + 1, x_of(f, v.axis_of(it->last))));
            draw->AddRectFilled(ImVec2(x0, y0 + 1), ImVec2(x1, y0 + lane_height - 1),
                                range_color(it->source));
            const std::string text_of_range = range_label(*v.doc_->source, *it);
            const std::string_view name = text_of_range;
            const ImVec2 text = ImGui::CalcTextSize(name.data(), name.data() + name.size());
            if (x1 - x0 > text.x + 6) {
                draw->AddText(ImVec2(x0 + 3, y0), IM_COL32(230, 240, 230, 255), name.data(),
                              name.data() + name.size());
            }
            if (ImGui::IsMouseHoveringRect(ImVec2(x0, y0), ImVec2(x1, y0 + lane_height))) {
                ImGui::SetTooltip("%.*s\n%s .. %s", static_cast<int>(name.size()), name.data(),
                                  v.axis_label(v.axis_of(it->first)).c_str(),
                                  v.axis_label(v.axis_of(it->last)).c_str());
            }
            // Skip every range that would land on the pixel just drawn.
            next_position = std::max(
                it->last + 1, v.position_of_axis(view_first + (std::floor(x1) + 1 - f.origin.x) /
                                                                  f.width * f.span));
            it = std::lower_bound(it + 1, ranges.end(), next_position,
                                  [](const annotation_range& r, size_t p) { return r.last < p; });
        }
    }
}

void view::timeline_state::draw_grid(const frame& f, bool labels) const {
    ImDrawList* draw = ImGui::GetWindowDrawList();
    const double y_step = nice_step(static_cast<double>(y_max) / 5, 1024);
    const float line = ImGui::GetTextLineHeight();
    for (double bytes = y_step; bytes < static_cast<double>(y_max); bytes += y_step) {
        const float y = y_of(f, static_cast<uint64_t>(bytes));
        if (!labels) {
            draw->AddLine(ImVec2(f.plot_origin.x, y), ImVec2(f.plot_end.x, y), palette::grid);
            continue;
        }
        const std::string text = format_bytes(static_cast<uint64_t>(bytes));
        const ImVec2 size = ImGui::CalcTextSize(text.c_str());
        const ImVec2 at(f.plot_origin.x + 4, y - line);
        draw->AddRectFilled(ImVec2(at.x - 2, at.y), ImVec2(at.x + size.x + 2, y),
                            IM_COL32(20, 21, 25, 200));
        draw->AddText(at, palette::text_dim, text.c_str());
    }
}

std::optional<size_t> view::timeline_state::draw_plot(view& v, const frame& f) {
    ImDrawList* draw = ImGui::GetWindowDrawList();
    const ImGuiIO& io = ImGui::GetIO();
    // Curves: reserved behind, then active (or allocated), min solid and max lighter; each
    // column covers the min and max of its positions. Layers, once computed, take the place of
    // the active area (the segments that of both).
    // While the layers of a new range are computed, those of the old one cover only part of it:
    // the curve shows where they do not reach.
    const bool layered = layers_usable(v);
    const float layers_x0 = layered ? x_of(f, layers.axis_spans.front().first) : 0;
    const float layers_x1 = layered ? x_of(f, layers.axis_spans.back().second) : 0;
    for (const column& c : columns) {
        const float x0 = f.origin.x + c.x0;
        const float x1 = f.origin.x + std::max(c.x1, c.x0 + 1);
        draw->AddRectFilled(ImVec2(x0, y_of(f, c.reserved_max)), ImVec2(x1, f.plot_end.y),
                            IM_COL32(110, 110, 125, 60));
        draw->AddRectFilled(
            ImVec2(x0, y_of(f, c.reserved_max)),
            ImVec2(x1, std::max(y_of(f, c.reserved_max) + 1, y_of(f, c.reserved_min))),
            palette::reserved);
        if (layered && x0 >= layers_x0 && x1 <= layers_x1 + 1) {
            continue;
        }
        draw->AddRectFilled(ImVec2(x0, y_of(f, c.active_min)), ImVec2(x1, f.plot_end.y),
                            IM_COL32(96, 104, 120, 255));
        draw->AddRectFilled(ImVec2(x0, y_of(f, c.active_max)), ImVec2(x1, y_of(f, c.active_min)),
                            IM_COL32(130, 138, 155, 255));
    }

    // The largest allocations.
    const auto& lifetimes = v.model().lifetimes();
    std::optional<size_t> hovered_band;
    const bool plot_hovered = ImGui::IsMouseHoveringRect(f.plot_origin, f.plot_end);
    for (const band& b : bands) {
        const analysis::allocation_lifetime& life = lifetimes[b.lifetime];
        const ImVec2 p0(f.origin.x + b.x0, y_of(f, b.top));
        const ImVec2 p1(f.origin.x + std::max(b.x1, b.x0 + 1), y_of(f, b.bottom));
        // The stack picks the hue; each allocation gets its own shade of it.
        ImU32 color = palette::shade(palette::for_key(life.stack),
                                     0.8f + 0.08f * static_cast<float>(b.lifetime % 5));
        if (v.searching() && !v.stack_matches(life.stack)) {
            color = palette::shade(color, 0.35f);
        }
        draw->AddRectFilled(p0, p1, color);
        if (p1.y - p0.y > 3) {
            draw->AddLine(ImVec2(p0.x, p0.y), ImVec2(p1.x, p0.y), palette::shade(color, 0.6f));
        }
        if (v.allocation_ == b.lifetime) {
            draw->AddRect(p0, p1, palette::selection, 0, 0, 2.0f);
        }
        if (plot_hovered && io.MousePos.x >= p0.x && io.MousePos.x < p1.x &&
            io.MousePos.y >= p0.y && io.MousePos.y < p1.y) {
            hovered_band = b.lifetime;
        }
    }

    return hovered_band;
}

void view::timeline_state::draw_marks(view& v, const frame& f) {
    ImDrawList* draw = ImGui::GetWindowDrawList();
    // With pending frees counted, the allocated curve shows as a line below the active one.
    if (include_pending && mode != stacking::segment) {
        for (const column& c : columns) {
            const float y = y_of(f, c.allocated_max);
            draw->AddRectFilled(ImVec2(f.origin.x + c.x0, y - 1),
                                ImVec2(f.origin.x + std::max(c.x1, c.x0 + 1), y + 1),
                                palette::allocated);
        }
    }
    // OOMs, markers, range and moment.
    float last_x = -1;
    for (const size_t entry : v.dev().oom_entries) {
        const float x = std::floor(x_of(f, v.axis_of(entry + 1)));
        if (x != last_x && x >= f.origin.x && x <= f.plot_end.x) {
            draw->AddLine(ImVec2(x, f.plot_origin.y), ImVec2(x, f.plot_end.y), palette::oom, 2.0f);
            draw->AddText(ImVec2(x + 3, f.plot_origin.y + 2), palette::oom, "OOM");
            last_x = x;
        }
    }
    last_x = -1;
    for (const size_t entry : v.dev().marker_entries) {
        const float x = std::floor(x_of(f, v.axis_of(entry + 1)));
        if (x != last_x && x >= f.origin.x && x <= f.plot_end.x) {
            draw->AddLine(ImVec2(x, f.plot_origin.y), ImVec2(x, f.plot_end.y), palette::annotation);
            last_x = x;
        }
    }
    if (v.range_) {
        draw->AddRectFilled(ImVec2(x_of(f, v.axis_of(v.range_->first)), f.plot_origin.y),
                            ImVec2(x_of(f, v.axis_of(v.range_->second)) + 1, f.plot_end.y),
                            palette::range);
    }
    const float moment_x = x_of(f, v.axis_of(v.moment_));
    draw->AddLine(ImVec2(moment_x, f.origin.y), ImVec2(moment_x, f.plot_end.y), palette::selection,
                  1.5f);

    // Time or index axis: as many ticks as their labels leave room for.
    const float label_width = ImGui::CalcTextSize(v.axis_label(view_last).c_str()).x + 16;
    const double ticks = std::clamp(static_cast<double>(f.width / label_width), 1.0, 8.0);
    const double x_step = nice_step(f.span / ticks, 10);
    // On the index axis position N + 1 is "entry N": ticks there give round entry numbers.
    const double offset = by_time ? 0.0 : 1.0;
    float free_from = f.origin.x;
    for (double a = std::ceil((view_first - offset) / x_step) * x_step + offset; a < view_last;
         a += x_step) {
        const float x = x_of(f, a);
        draw->AddLine(ImVec2(x, f.plot_end.y), ImVec2(x, f.plot_end.y + 4), palette::text_dim);
        const std::string label = v.axis_label(a);
        if (x + 2 >= free_from) {
            draw->AddText(ImVec2(x + 2, f.plot_end.y + 3), palette::text_dim, label.c_str());
            free_from = x + 2 + ImGui::CalcTextSize(label.c_str()).x + 8;
        }
    }
}

void view::timeline_state::handle_input(view& v, const frame& f, std::optional<size_t> hovered_band,
                                        std::optional<layer_hit> hovered_layer) {
    ImDrawList* draw = ImGui::GetWindowDrawList();
    const ImGuiIO& io = ImGui::GetIO();
    // Input: the whole area is one button so drags that leave it keep going.
    ImGui::InvisibleButton("##plot", ImVec2(f.width, f.lanes_height + f.plot_height),
                           ImGuiButtonFlags_MouseButtonLeft | ImGuiButtonFlags_MouseButtonRight);
    const bool hovered = ImGui::IsItemHovered();
    const bool active = ImGui::IsItemActive();
    ImGui::Dummy(ImVec2(f.width, axis_height()));  // the axis labels' room in the layout
    const double mouse_axis =
        view_first + static_cast<double>(io.MousePos.x - f.origin.x) / f.width * f.span;
    const double total = v.axis_end();
    if (hovered && io.MouseWheel != 0) {
        const double factor = std::pow(1.25, -io.MouseWheel);
        const double min_span = by_time ? 1000.0 : 8.0;
        const double new_span = std::clamp(f.span * factor, min_span, total);
        const double fraction = (mouse_axis - view_first) / f.span;
        view_first = std::clamp(mouse_axis - fraction * new_span, 0.0, total - new_span);
        view_last = view_first + new_span;
    }
    const bool range_drag = ImGui::IsMouseClicked(ImGuiMouseButton_Right) ||
                            (ImGui::IsMouseClicked(ImGuiMouseButton_Left) && io.KeyShift);
    if (hovered && range_drag) {
        selecting_range = true;
        range_anchor = mouse_axis;
    }
    if (selecting_range) {
        if (ImGui::IsMouseDown(ImGuiMouseButton_Left) ||
            ImGui::IsMouseDown(ImGuiMouseButton_Right)) {
            v.set_range(std::pair(v.position_of_axis(std::min(range_anchor, mouse_axis)),
                                  v.position_of_axis(std::max(range_anchor, mouse_axis))));
        } else {
            selecting_range = false;
            if (std::abs(mouse_axis - range_anchor) / f.span * f.width < 3) {
                v.range_.reset();
            }
        }
    }
    if (!selecting_range && active && ImGui::IsMouseDragging(ImGuiMouseButton_Left)) {
        const double shift = static_cast<double>(io.MouseDelta.x) / f.width * f.span;
        view_first = std::clamp(view_first - shift, 0.0, std::max(0.0, total - f.span));
        view_last = view_first + f.span;
    }
    if (hovered && ImGui::IsMouseReleased(ImGuiMouseButton_Left) && !io.KeyShift &&
        io.MouseDragMaxDistanceSqr[ImGuiMouseButton_Left] < 16) {
        v.set_moment(v.position_of_axis(mouse_axis));
        if (hovered_band) {
            v.set_allocation(hovered_band);
        }
    }
    if (hovered && !selecting_range && !ImGui::IsMouseDragging(ImGuiMouseButton_Left)) {
        draw->AddLine(ImVec2(io.MousePos.x, f.origin.y), ImVec2(io.MousePos.x, f.plot_end.y),
                      IM_COL32(255, 255, 255, 70));
        ImGui::BeginTooltip();
        if (hovered_band) {
            v.allocation_tooltip(*hovered_band);
        } else if (hovered_layer) {
            layer_tooltip(v, *hovered_layer);
        } else {
            const size_t p = v.position_of_axis(mouse_axis);
            if (p == 0) {
                ImGui::Text("start");
            } else {
                const snapshot::trace_entry& e = v.model().entry(p - 1);
                ImGui::Text("%s: %s %s", position_label(p).c_str(),
                            snapshot::action_name(e.kind).data(), format_bytes(e.size).c_str());
            }
            if (by_time) {
                ImGui::TextDisabled("%s", v.axis_label(v.axis_of(p)).c_str());
            }
            auto value = [&](analysis::series s) { return format_bytes(v.model().values(s)[p]); };
            ImGui::Text("allocated %s", value(analysis::series::allocated).c_str());
            ImGui::Text("active    %s", value(analysis::series::active).c_str());
            ImGui::Text("reserved  %s", value(analysis::series::reserved).c_str());
        }
        ImGui::EndTooltip();
    }
}

}  // namespace memtrail::viewer

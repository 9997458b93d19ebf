// Segments: the allocator's state at the selected moment (or at the end of the selected range,
// with what the range allocated and freed marked), one row per segment, its blocks coloured by
// state (allocated, rounding waste, pending free, free) or by allocation stack.
// Blocks narrower than a pixel are merged into one pixel column coloured by what fills most of
// it, so a segment of thousands of small blocks still costs one item per pixel.
//
// Index of this file:
// [SECTION] drawing helpers
// [SECTION] the changes of the selected range
// [SECTION] the panel
// [SECTION] one row
// [SECTION] blocks and their tooltip

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <future>

#include "detail/format.hpp"
#include "detail/palette.hpp"
#include "detail/view_panels.hpp"

namespace memtrail::viewer {

namespace {

constexpr float row_height = 20.0f;

//-------------------------------------------------------------------------------------------------
// [SECTION] drawing helpers
//-------------------------------------------------------------------------------------------------

// What fills a pixel column made of blocks narrower than a pixel.
struct column_fill {
    float x = -1;                     // pixel column, -1: empty
    std::array<uint64_t, 4> bytes{};  // allocated, waste, pending, free
    snapshot::stack_id largest_stack = snapshot::no_id;
    uint64_t largest_size = 0;
};

// Starts a new line unless the rest of the current one holds `width` more pixels: a text that
// follows another on its line is never cut at the window's edge.
void new_line_unless_room(float width) {
    if (ImGui::GetContentRegionAvail().x < width) {
        ImGui::NewLine();
    }
}

void legend_item(ImU32 color, const char* label) {
    const float h = ImGui::GetTextLineHeight();
    new_line_unless_room(h + ImGui::GetStyle().ItemSpacing.x + ImGui::CalcTextSize(label).x);
    const ImVec2 p = ImGui::GetCursorScreenPos();
    ImGui::GetWindowDrawList()->AddRectFilled(ImVec2(p.x, p.y + 2), ImVec2(p.x + h, p.y + h - 2),
                                              color);
    ImGui::Dummy(ImVec2(h, h));
    ImGui::SameLine();
    ImGui::TextUnformatted(label);
    ImGui::SameLine();
}

// One mark per run of pixels: spans closer than a pixel are drawn as one.
class span_marks {
  public:
    span_marks(float y0, float y1, ImU32 color) : y0_(y0), y1_(y1), color_(color) {}
    ~span_marks() { flush(); }
    span_marks(const span_marks&) = delete;
    span_marks& operator=(const span_marks&) = delete;
    void add(float x0, float x1) {
        x1 = std::max(x1, x0 + 1.0f);
        if (x0_ >= 0 && x0 <= x1_ + 1.0f) {
            x1_ = std::max(x1_, x1);
            return;
        }
        flush();
        x0_ = x0;
        x1_ = x1;
    }

  private:
    void flush() {
        if (x0_ >= 0) {
            ImGui::GetWindowDrawList()->AddRectFilled(ImVec2(x0_, y0_), ImVec2(x1_, y1_), color_);
        }
        x0_ = -1;
    }
    float y0_, y1_;
    ImU32 color_;
    float x0_ = -1, x1_ = -1;
};

}  // namespace

//-------------------------------------------------------------------------------------------------
// [SECTION] the changes of the selected range
//-------------------------------------------------------------------------------------------------

bool view::segments_state::range_current(const view& v) const {
    const size_t count = v.model().event_count();
    return v.range_ && range && range->device_index == v.device_index_ &&
           range->changes.first == std::min(v.range_->first, count) &&
           range->changes.last == std::min(v.range_->second, count);
}

const view::segments_state::range_cache* view::segments_state::changes_of(const view& v) {
    if (range_job.valid() &&
        range_job.wait_for(std::chrono::seconds(0)) == std::future_status::ready) {
        range = range_job.get();
    }
    if (!v.range_) {
        return nullptr;
    }
    if (!range_job.valid() && !range_current(v)) {
        const analysis::device_model m = v.model();
        const size_t device_index = v.device_index_;
        const auto [first, last] = *v.range_;
        range_job = std::async(std::launch::async, [m, device_index, first, last] {
            range_cache c;
            c.device_index = device_index;
            c.changes = analysis::changes_over(m, first, last);
            c.totals = analysis::totals_of(c.changes.at_end);
            return c;
        });
    }
    return range ? &*range : nullptr;
}

//-------------------------------------------------------------------------------------------------
// [SECTION] the panel
//-------------------------------------------------------------------------------------------------

void view::draw_segments() {
    segments_state& panel = panels_->segments;
    const segments_state::range_cache* in_range = panel.changes_of(*this);
    const analysis::range_changes* changes = in_range ? &in_range->changes : nullptr;
    const analysis::memory_state& state = changes ? changes->at_end : state_at_moment();
    const analysis::memory_totals& totals = in_range ? in_range->totals : panels_->state.totals;
    const size_t position = changes ? changes->last : moment_;
    if (changes) {
        ImGui::TextColored(
            ImGui::ColorConvertU32ToFloat4(palette::selection),
            "at the end of the range %s .. %s%s:", position_label(changes->first).c_str(),
            position_label(changes->last).c_str(),
            panel.range_current(*this) ? "" : " (updating...)");
        ImGui::SameLine();
    } else if (range_) {
        ImGui::TextDisabled("(computing the range's changes...)");
        ImGui::SameLine();
    }
    const std::string summary =
        format_count(totals.segments) + " segments  reserved " + format_bytes(totals.reserved) +
        "  allocated " + format_bytes(totals.allocated) + "  pending free " +
        format_bytes(totals.pending_free) + "  free " + format_bytes(totals.free) + "  waste " +
        format_bytes(totals.rounding_waste);
    new_line_unless_room(ImGui::CalcTextSize(summary.c_str()).x);
    ImGui::TextUnformatted(summary.c_str());
    ImGui::SameLine();
    char fragmentation[96];
    std::snprintf(fragmentation, sizeof fragmentation, "largest free %s, fragmentation %.1f%%",
                  format_bytes(totals.largest_free).c_str(), totals.fragmentation() * 100.0);
    new_line_unless_room(ImGui::CalcTextSize(fragmentation).x);
    ImGui::TextDisabled("%s", fragmentation);
    ImGui::Checkbox("colour by stack", &panel.color_by_stack);
    ImGui::SameLine();
    ImGui::Checkbox("fit each row", &panel.fit_each_row);
    ImGui::SameLine();
    if (panel.color_by_stack) {
        legend_item(palette::free_block, "free");
    } else {
        legend_item(palette::allocated, "allocated");
        legend_item(palette::rounding_waste, "rounding waste");
        legend_item(palette::pending_free, "pending free");
        legend_item(palette::free_block, "free");
    }
    new_line_unless_room(ImGui::CalcTextSize("left/right: step entries").x);
    ImGui::TextDisabled("left/right: step entries");
    // The filter's combo ends the line; without one the legend's line ends here.
    if (!panels_->pools.of(*this).private_pools().empty()) {
        ImGui::SameLine();
        panels_->pools.draw_filter(*this);
    }
    if (changes) {
        legend_item(palette::grown, "allocated in the range (a line along the top)");
        legend_item(palette::shrunk, "freed in the range (a line along the bottom)");
        ImGui::TextDisabled("%zu segments reserved in the range (marked new)",
                            changes->new_segments.size());
    }

    // The rows the pool filter lets through, each with its pool (inferred from its stream when
    // the snapshot no longer holds the segment, unknown when that says nothing either).
    const analysis::segment_pools& pools = panels_->pools.of(*this);
    const analysis::pool_filter& filter = panels_->pools.filter;
    panel.rows.clear();
    uint64_t largest_segment = 1;
    for (const snapshot::segment& s : state.segments) {
        const std::optional<analysis::resolved_pool> resolved = pools.resolve(s);
        const std::optional<analysis::segment_pool> pool =
            resolved ? std::optional(resolved->pool) : std::nullopt;
        if (filter.accepts(pool)) {
            panel.rows.push_back({&s, pool, resolved && resolved->inferred});
            largest_segment = std::max(largest_segment, s.total_size);
        }
    }
    const analysis::allocation_lifetime* selected =
        allocation_ ? &model().lifetimes()[*allocation_] : nullptr;

    // Room for the longest label, so that no bar covers the end of one.
    panel.label_width = 0;
    for (const segments_state::row& r : panel.rows) {
        panel.label_width = std::max(
            panel.label_width, ImGui::CalcTextSize(panel.row_label(*this, r, changes).c_str()).x);
    }
    panel.label_width += 2 * ImGui::GetStyle().ItemSpacing.x;
    ImGui::BeginChild("##segment_rows");
    const float bar_width =
        std::max(32.0f, ImGui::GetContentRegionAvail().x - panel.label_width - 8);
    ImGuiListClipper clipper;
    clipper.Begin(static_cast<int>(panel.rows.size()));
    while (clipper.Step()) {
        for (int row = clipper.DisplayStart; row < clipper.DisplayEnd; ++row) {
            panel.draw_row(*this, panel.rows[static_cast<size_t>(row)], largest_segment, bar_width,
                           selected, position, changes);
        }
    }
    ImGui::EndChild();
}

//-------------------------------------------------------------------------------------------------
// [SECTION] one row
//-------------------------------------------------------------------------------------------------

std::string view::segments_state::row_label(const view& v, const row& r,
                                            const analysis::range_changes* changes) {
    const snapshot::segment& seg = *r.segment;
    std::string label = format_address(seg.address) + (seg.is_large ? " large  " : " small  ") +
                        format_bytes(seg.total_size) + "  " + v.dev().stream_names.name(seg.stream);
    if (r.pool && !r.pool->is_default()) {
        label += "  pool " + analysis::pool_name(*r.pool) + " " + analysis::pool_kind(*r.pool) +
                 (r.pool_inferred ? "~" : "");
    }
    if (changes && changes->is_new_segment(seg.address)) {
        label += "  new";
    }
    return label;
}

void view::segments_state::draw_row(view& v, const row& r, uint64_t largest_segment,
                                    float bar_width, const analysis::allocation_lifetime* selected,
                                    size_t position, const analysis::range_changes* changes) {
    const snapshot::segment& seg = *r.segment;
    ImDrawList* draw = ImGui::GetWindowDrawList();
    const ImVec2 origin = ImGui::GetCursorScreenPos();
    ImGui::AlignTextToFramePadding();
    ImGui::TextUnformatted(row_label(v, r, changes).c_str());
    const float bar_x = origin.x + label_width;
    // To scale (the largest segment fills the width), or each row filling it.
    const float scale =
        bar_width / static_cast<float>(fit_each_row ? seg.total_size : largest_segment);
    const float y0 = origin.y + 2;
    const float y1 = origin.y + row_height - 2;
    ImGui::SameLine(label_width);
    ImGui::InvisibleButton("##bar",
                           ImVec2(static_cast<float>(seg.total_size) * scale + 1, row_height - 2));
    const bool bar_hovered = ImGui::IsItemHovered();

    draw_blocks(v, seg, bar_x, scale, y0, y1);
    if (changes) {
        draw_changes(seg, *changes, bar_x, scale, y0, y1);
    }
    if (selected != nullptr && selected->address >= seg.address &&
        selected->address < seg.address + seg.total_size && selected->begin <= position &&
        position < selected->released) {
        const float x0 = bar_x + static_cast<float>(selected->address - seg.address) * scale;
        const float x1 = x0 + std::max(2.0f, static_cast<float>(selected->size) * scale);
        draw->AddRect(ImVec2(x0 - 1, y0 - 2), ImVec2(x1 + 1, y1 + 2), palette::selection, 0, 0,
                      2.0f);
    }

    if (bar_hovered) {
        block_tooltip(v, r, bar_x, scale, position, changes);
    }
}

void view::segments_state::draw_changes(const snapshot::segment& seg,
                                        const analysis::range_changes& changes, float bar_x,
                                        float scale, float y0, float y1) {
    const float line = std::max(2.0f, (y1 - y0) * 0.2f);
    auto x_of = [&](uint64_t address) {
        return bar_x + static_cast<float>(address - seg.address) * scale;
    };
    {
        span_marks allocated(y0, y0 + line, palette::grown);
        for (const snapshot::block& b : seg.blocks) {
            if (b.state != snapshot::block_state::inactive && changes.is_new_block(b.address)) {
                allocated.add(x_of(b.address), x_of(b.address + b.size));
            }
        }
    }
    span_marks freed(y1 - line, y1, palette::shrunk);
    const uint64_t seg_end = seg.address + seg.total_size;
    auto it = std::lower_bound(
        changes.freed.begin(), changes.freed.end(), seg.address,
        [](const std::pair<uint64_t, uint64_t>& span, uint64_t a) { return span.second <= a; });
    for (; it != changes.freed.end() && it->first < seg_end; ++it) {
        freed.add(x_of(std::max(it->first, seg.address)), x_of(std::min(it->second, seg_end)));
    }
}

//-------------------------------------------------------------------------------------------------
// [SECTION] blocks and their tooltip
//-------------------------------------------------------------------------------------------------

void view::segments_state::draw_blocks(view& v, const snapshot::segment& seg, float bar_x,
                                       float scale, float y0, float y1) {
    ImDrawList* draw = ImGui::GetWindowDrawList();
    auto block_color = [&](const snapshot::block& b) {
        ImU32 c = palette::free_block;
        if (b.state != snapshot::block_state::inactive) {
            if (color_by_stack) {
                c = palette::for_key(b.stack);
                if (b.state == snapshot::block_state::active_pending_free) {
                    c = palette::shade(c, 0.6f);
                }
            } else {
                c = b.state == snapshot::block_state::active_allocated ? palette::allocated
                                                                       : palette::pending_free;
            }
            if (v.searching() && !v.stack_matches(b.stack)) {
                c = palette::shade(c, 0.35f);
            }
        }
        return c;
    };
    column_fill fill;
    auto flush = [&] {
        if (fill.x < 0) {
            return;
        }
        const auto most = static_cast<size_t>(
            std::max_element(fill.bytes.begin(), fill.bytes.end()) - fill.bytes.begin());
        ImU32 c = palette::free_block;
        if (color_by_stack && most != 3) {
            c = palette::for_key(fill.largest_stack);
        } else if (most == 0) {
            c = palette::allocated;
        } else if (most == 1) {
            c = palette::rounding_waste;
        } else if (most == 2) {
            c = palette::pending_free;
        }
        draw->AddRectFilled(ImVec2(fill.x, y0), ImVec2(fill.x + 1, y1), c);
        fill = column_fill{};
    };
    for (const snapshot::block& b : seg.blocks) {
        const float x0 = bar_x + static_cast<float>(b.address - seg.address) * scale;
        const float x1 = x0 + static_cast<float>(b.size) * scale;
        const bool active = b.state != snapshot::block_state::inactive;
        const uint64_t used = std::min(b.size, b.requested_size);
        if (x1 - x0 < 1.0f) {
            const float column = std::floor(x0);
            if (column != fill.x) {
                flush();
                fill.x = column;
            }
            if (!active) {
                fill.bytes[3] += b.size;
            } else if (b.state == snapshot::block_state::active_pending_free) {
                fill.bytes[2] += b.size;
            } else {
                fill.bytes[0] += used;
                fill.bytes[1] += b.size - used;
            }
            if (active && b.size > fill.largest_size) {
                fill.largest_size = b.size;
                fill.largest_stack = b.stack;
            }
            continue;
        }
        flush();
        const ImU32 color = block_color(b);
        if (active && !color_by_stack && b.state == snapshot::block_state::active_allocated &&
            used < b.size) {
            // Rounding waste: what the block holds beyond the request.
            const float split = x0 + static_cast<float>(used) * scale;
            draw->AddRectFilled(ImVec2(x0, y0), ImVec2(split, y1), color);
            draw->AddRectFilled(ImVec2(split, y0), ImVec2(x1, y1), palette::rounding_waste);
        } else {
            draw->AddRectFilled(ImVec2(x0, y0), ImVec2(x1, y1), color);
        }
        if (x1 - x0 >= 4.0f) {
            draw->AddLine(ImVec2(x1 - 1, y0), ImVec2(x1 - 1, y1), IM_COL32(0, 0, 0, 110));
        }
    }
    flush();
}

void view::segments_state::block_tooltip(view& v, const row& r, float bar_x, float scale,
                                         size_t position, const analysis::range_changes* changes) {
    const snapshot::segment& seg = *r.segment;
    const ImGuiIO& io = ImGui::GetIO();
    const uint64_t offset = static_cast<uint64_t>(std::max(0.0f, (io.MousePos.x - bar_x) / scale));
    auto it = std::upper_bound(
        seg.blocks.begin(), seg.blocks.end(), seg.address + offset,
        [](uint64_t address, const snapshot::block& b) { return address < b.address; });
    if (it == seg.blocks.begin()) {
        return;
    }
    const snapshot::block& b = *(it - 1);
    const bool active = b.state != snapshot::block_state::inactive;
    ImGui::BeginTooltip();
    ImGui::Text("block %s  %s  %s", format_address(b.address).c_str(), format_bytes(b.size).c_str(),
                snapshot::block_state_name(b.state).data());
    if (active) {
        ImGui::Text("requested %s, rounding waste %s", format_bytes(b.requested_size).c_str(),
                    format_bytes(b.size - std::min(b.size, b.requested_size)).c_str());
    }
    ImGui::TextDisabled(
        "segment %s  %s of %s allocated, %s, %s pool", format_address(seg.address).c_str(),
        format_bytes(seg.allocated_size).c_str(), format_bytes(seg.total_size).c_str(),
        v.dev().stream_names.name_with_handle(seg.stream).c_str(),
        seg.is_large ? "large" : "small");
    const std::string pool_text =
        !r.pool ? std::string("pool unknown (the snapshot no longer holds the segment)")
        : r.pool->is_default()
            ? std::string("default pools")
            : "private pool " + analysis::pool_name(*r.pool) + ": " +
                  v.panels_->pools.of(v).owner(*r.pool) +
                  (r.pool_inferred ? " (inferred from the segment's stream)" : "");
    ImGui::TextDisabled("%s", pool_text.c_str());
    if (changes && active && changes->is_new_block(b.address)) {
        ImGui::TextColored(ImGui::ColorConvertU32ToFloat4(palette::grown),
                           "allocated in the selected range");
    }
    if (active) {
        ImGui::Separator();
        v.stack_tooltip(b.stack, 12);
    }
    ImGui::EndTooltip();
    if (active && ImGui::IsItemClicked(ImGuiMouseButton_Left)) {
        v.set_allocation(v.dev().allocation_at(b.address, position));
    }
}

}  // namespace memtrail::viewer

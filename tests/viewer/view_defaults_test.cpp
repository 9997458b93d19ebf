// The viewer's defaults (issue 32): a snapshot opens at its peak, not after teardown; entries are
// numbered as the CLI numbers them.

#include <gtest/gtest.h>

#include <algorithm>
#include <cfloat>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include <imgui_internal.h>

#include "../../viewer/src/detail/format.hpp"
#include "../../viewer/src/detail/palette.hpp"
#include "../../viewer/src/detail/remedies_job.hpp"
#include "memtrail/analysis/device_model.hpp"
#include "memtrail/viewer/view.hpp"
#include "view_test_support.hpp"

namespace memtrail::viewer {
namespace {

const std::string traces = MEMTRAIL_UNPACKED_TRACES;

// A real job's trace ends after teardown: at its end nothing is allocated, at its peak GiBs are.
TEST(view_defaults, a_snapshot_opens_at_its_first_peak_of_allocated_memory) {
    const auto doc = load(traces + "/fsdp2_gpu__rank0.pickle");
    const analysis::device_model& model = doc->devices.front().model;
    const auto& allocated = model.values(analysis::series::allocated);
    const size_t peak = model.peak_position(analysis::series::allocated);
    ASSERT_GT(allocated[peak], allocated[model.event_count()]) << "the trace ends lower";

    view v(doc);
    EXPECT_EQ(v.moment(), peak);
    for (size_t p = 0; p < peak; ++p) {
        ASSERT_LT(allocated[p], allocated[peak]) << "the first moment at the highest";
    }
    ASSERT_TRUE(v.select_moment("end")) << "--at still wins";
    EXPECT_EQ(v.moment(), model.event_count());
}

// The CLI names the state after trace entry N "entry N" (position_label in cli/src/common.cpp);
// the toolbar, the timeline's axis and tooltips, the events and the OOM view say the same.
TEST(view_defaults, entries_are_numbered_as_the_cli_numbers_them) {
    EXPECT_EQ(position_label(0), "start");
    EXPECT_EQ(position_label(1475), "entry 1474");

    headless_frame frame(width, height);
    view v(torch_document());
    v.set_moment(1475);
    const std::string timeline = settled_text(frame, v);
    EXPECT_NE(timeline.find("entry 1474 of "), std::string::npos) << timeline;
    EXPECT_EQ(timeline.find("#1,475"), std::string::npos);
    EXPECT_EQ(timeline.find("after event"), std::string::npos);

    v.show(view_kind::events);
    const std::string events = settled_text(frame, v);
    EXPECT_NE(events.find("entry 1474 of "), std::string::npos);
    EXPECT_NE(events.find("1474"), events.rfind("1474")) << "the row of entry 1474 is listed";
}

// The OOM view names the failed entry as `memtrail oom` does.
TEST(view_defaults, the_oom_view_names_the_failed_entry_as_the_cli_does) {
    const auto doc = load(traces + "/oom_graph_pool.pickle");
    const auto& ooms = doc->devices.front().oom_entries;
    ASSERT_FALSE(ooms.empty());
    headless_frame frame(width, height);
    view v(doc);
    v.show(view_kind::oom);
    const std::string text = settled_text(frame, v);
    const std::string expected = "Out of memory at entry " + std::to_string(ooms.front()) + " (";
    EXPECT_NE(text.find(expected), std::string::npos) << text;
}

// The OOM view shows the remedies `memtrail oom` proves by what-if replays (asked of the CLI in
// the background): on fragmentation under a cap, no allocator setting helps; lifting the cap does.
TEST(view_defaults, the_oom_view_shows_the_remedies_memtrail_oom_proves) {
    const auto doc = load(traces + "/oom_cap_fragmentation.pickle");
    headless_frame frame(width, height);
    view v(doc);
    v.show(view_kind::oom);
    const std::string text = settled_text(frame, v);
    EXPECT_NE(text.find("Remedies, each checked by replaying the trace under it"),
              std::string::npos)
        << text;
    EXPECT_NE(text.find("with expandable_segments:True this OOM still happens"), std::string::npos)
        << text;
    EXPECT_NE(text.find("with no memory cap this OOM does not happen"), std::string::npos) << text;
    EXPECT_NE(text.find("no allocator setting avoids it under the cap: raise the cap to at least"),
              std::string::npos)
        << text;
    EXPECT_EQ(text.find("not available"), std::string::npos) << text;
}

// What the background job reads, from the CLI's JSON; a report it cannot read says what lacks.
TEST(view_defaults, remedies_are_read_from_the_clis_json_and_bad_json_is_named) {
    const auto remedies = parse_oom_remedies(
        R"({"ooms":[{"entry":61,"remedies":{"checked":true,"tried":[{"setting":"no memory cap",
            "kind":"no_memory_cap","avoids":true,"peak_reserved":1024}]}}]})");
    ASSERT_EQ(remedies.count(61), 1u);
    ASSERT_EQ(remedies.at(61).tried.size(), 1u);
    EXPECT_EQ(remedies.at(61).tried[0].kind, analysis::remedy_kind::no_memory_cap);
    EXPECT_TRUE(remedies.at(61).tried[0].avoids);
    EXPECT_THROW(parse_oom_remedies(R"({"ooms":[{"entry":61}]})"), std::runtime_error);
    EXPECT_THROW(parse_oom_remedies(R"({"ooms":[{"entry":61,"remedies":{"checked":true,
        "tried":[{"setting":"x","kind":"bogus","avoids":true,"peak_reserved":1}]}}]})"),
                 std::runtime_error);
}

// How far the widest item of the settled frame's windows reaches past its window's right edge
// (0 when every item fits), and that window's name.
std::pair<float, std::string> overflow_past_right_edge() {
    std::pair<float, std::string> worst(0.0f, "");
    for (const ImGuiWindow* w : ImGui::GetCurrentContext()->Windows) {
        if (!w->WasActive || (w->Flags & (ImGuiWindowFlags_Tooltip | ImGuiWindowFlags_Popup))) {
            continue;
        }
        const float past = w->DC.CursorMaxPos.x - w->InnerClipRect.Max.x;
        if (past > worst.first) {
            worst = {past, w->Name};
        }
    }
    return worst;
}

// In a narrow window the Segments view's labels (the pool filter's name, the totals, the legend,
// each row's address, size, stream and private pool) move to lines of their own, never cut.
TEST(view_defaults, no_segments_label_is_cut_in_a_narrow_window) {
    const auto doc = load(traces + "/oom_graph_pool.pickle");
    headless_frame frame(900, 400);
    view v(doc);
    v.show(view_kind::segments);
    settle(frame, v);
    const auto [past, window] = overflow_past_right_edge();
    EXPECT_LE(past, 1.0f) << window;
    const std::string text = settled_text(frame, v);
    EXPECT_NE(text.find("pool (1, 0) CUDA graph"), std::string::npos) << text;
}

// The width of each segment row's bar in the settled Segments view, top row first: the extent of
// the block colours in each row of the rows' window (a bar is 16 pixels high, rows further apart).
std::vector<float> segment_bar_widths() {
    const std::set<ImU32> block_colors = {palette::allocated, palette::rounding_waste,
                                          palette::pending_free, palette::free_block};
    std::map<float, std::pair<float, float>> by_y;  // vertex y: min x, max x
    for (const ImGuiWindow* w : ImGui::GetCurrentContext()->Windows) {
        if (!w->WasActive || std::string(w->Name).find("##segment_rows") == std::string::npos) {
            continue;
        }
        for (const ImDrawVert& vertex : w->DrawList->VtxBuffer) {
            if (block_colors.count(vertex.col)) {
                auto [it, added] = by_y.try_emplace(vertex.pos.y, vertex.pos.x, vertex.pos.x);
                it->second.first = std::min(it->second.first, vertex.pos.x);
                it->second.second = std::max(it->second.second, vertex.pos.x);
            }
        }
    }
    std::vector<float> widths;
    float row_top = -FLT_MAX;
    std::pair<float, float> row(FLT_MAX, -FLT_MAX);
    for (const auto& [y, extent] : by_y) {
        if (y > row_top + 17.0f) {
            if (row_top > -FLT_MAX) {
                widths.push_back(row.second - row.first);
            }
            row_top = y;
            row = extent;
        }
        row = {std::min(row.first, extent.first), std::max(row.second, extent.second)};
    }
    if (row_top > -FLT_MAX) {
        widths.push_back(row.second - row.first);
    }
    return widths;
}

// Rows are drawn to scale: at mempool_release's peak its 2 MiB small segment is a twelfth of its
// 24 MiB ones; "fit each row" draws every row as wide.
TEST(view_defaults, segment_rows_are_drawn_to_scale_unless_fit_each_row) {
    const auto doc = load(traces + "/mempool_release.pickle");
    headless_frame frame(width, height);
    view v(doc);
    v.show(view_kind::segments);
    settle(frame, v);
    std::vector<uint64_t> sizes;
    for (const snapshot::segment& seg :
         doc->devices.front().model.state_after(v.moment()).segments) {
        sizes.push_back(seg.total_size);
    }
    std::vector<float> widths = segment_bar_widths();
    ASSERT_EQ(widths.size(), sizes.size());
    const uint64_t largest = *std::max_element(sizes.begin(), sizes.end());
    const float full = *std::max_element(widths.begin(), widths.end());
    for (size_t i = 0; i < sizes.size(); ++i) {
        EXPECT_NEAR(widths[i] / full, static_cast<double>(sizes[i]) / static_cast<double>(largest),
                    0.01)
            << "row " << i;
    }

    v.fit_segment_rows(true);
    settle(frame, v);
    widths = segment_bar_widths();
    for (const float w : widths) {
        EXPECT_NEAR(w, full, 1.0f);
    }
}

// The row of the logged table in `text` whose first cell is `name`; "" when there is none.
std::string line_of(const std::string& text, const std::string& name) {
    const size_t at = text.find("\n| " + name + " |");
    return at == std::string::npos ? "" : text.substr(at + 1, text.find('\n', at + 1) - at - 1);
}

// --at peak and --at end choose what the compare view sets side by side: the peaks (as the view
// opens) or the ends.
TEST(view_defaults, the_compare_view_honours_the_moment_asked_for) {
    headless_frame frame(width, height);
    view v(torch_document());
    v.set_comparison(memtrail_document());
    v.show(view_kind::compare);
    const auto& model = torch_document()->devices.front().model;
    const auto& allocated = model.values(analysis::series::allocated);
    const std::string at_peak =
        format_bytes(allocated[model.peak_position(analysis::series::allocated)]);
    const std::string at_end = format_bytes(allocated[model.event_count()]);
    ASSERT_NE(at_peak, at_end);

    std::string line = line_of(settled_text(frame, v), "allocated");
    EXPECT_NE(line.find(at_peak), std::string::npos) << "opened at the peak: " << line;
    ASSERT_TRUE(v.select_moment("end"));
    line = line_of(settled_text(frame, v), "allocated");
    EXPECT_NE(line.find(at_end), std::string::npos) << "--at end: " << line;
    EXPECT_EQ(line.find(at_peak), std::string::npos) << line;
    ASSERT_TRUE(v.select_moment("peak"));
    line = line_of(settled_text(frame, v), "allocated");
    EXPECT_NE(line.find(at_peak), std::string::npos) << "--at peak: " << line;
}

}  // namespace
}  // namespace memtrail::viewer

// The views, headless: every view builds a frame for a PyTorch pickle and a memtrail snapshot,
// the frame stays within a per-pixel budget, and the linked selection (a selected range driving
// every view among it) and the keyboard work.

#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <memory>
#include <set>
#include <string>
#include <thread>

#include <imgui_internal.h>
#include <unistd.h>

#include "../../viewer/src/detail/file_dialog.hpp"
#include "../../viewer/src/detail/format.hpp"
#include "memtrail/analysis/categories.hpp"
#include "memtrail/snapshot/load.hpp"
#include "memtrail/snapshot/torch_pickle.hpp"
#include "memtrail/viewer/document.hpp"
#include "memtrail/viewer/headless_frame.hpp"
#include "memtrail/viewer/rank_table.hpp"
#include "memtrail/viewer/view.hpp"
#include "memtrail/viewer/workspace.hpp"
#include "view_test_support.hpp"

namespace memtrail::viewer {
namespace {

// How many of the frame's vertices have `color`.
size_t vertices_of_color(const ImDrawData& data, ImU32 color) {
    size_t count = 0;
    for (int l = 0; l < data.CmdListsCount; ++l) {
        for (const ImDrawVert& vertex : data.CmdLists[l]->VtxBuffer) {
            count += vertex.col == color;
        }
    }
    return count;
}

struct view_case {
    const char* file;
    view_kind kind;
};

class every_view : public ::testing::TestWithParam<view_case> {};

TEST_P(every_view, builds_a_frame_within_the_pixel_budget) {
    const auto& doc =
        std::string(GetParam().file) == "torch" ? torch_document() : memtrail_document();
    ASSERT_TRUE(doc);
    headless_frame frame(width, height);
    view v(doc);
    v.show(GetParam().kind);
    ASSERT_TRUE(v.select_moment("peak"));
    v.set_comparison(GetParam().kind == view_kind::compare ? memtrail_document() : nullptr);
    const ImDrawData& data = settle(frame, v);
    EXPECT_EQ(v.shown(), GetParam().kind);
    EXPECT_GT(data.CmdListsCount, 0);
    EXPECT_GT(data.TotalVtxCount, 1000) << "the view drew almost nothing";
    // Per-pixel aggregation: a frame holds a few quads per pixel column and text, never one
    // item per event or block. 4 vertices per quad, a dozen quads per column is generous.
    EXPECT_LT(data.TotalVtxCount, 4 * 12 * width + 200000);
}

std::string case_name(const ::testing::TestParamInfo<view_case>& info) {
    return std::string(info.param.file) + "_" + std::string(view_kind_name(info.param.kind));
}

INSTANTIATE_TEST_SUITE_P(
    viewer, every_view,
    ::testing::Values(
        view_case{"torch", view_kind::timeline}, view_case{"torch", view_kind::segments},
        view_case{"torch", view_kind::flame}, view_case{"torch", view_kind::events},
        view_case{"torch", view_kind::allocation}, view_case{"torch", view_kind::stats},
        view_case{"torch", view_kind::oom}, view_case{"torch", view_kind::compare},
        view_case{"torch", view_kind::ranks}, view_case{"memtrail", view_kind::timeline},
        view_case{"memtrail", view_kind::segments}, view_case{"memtrail", view_kind::flame},
        view_case{"memtrail", view_kind::events}, view_case{"memtrail", view_kind::allocation},
        view_case{"memtrail", view_kind::stats}, view_case{"memtrail", view_kind::oom},
        view_case{"memtrail", view_kind::compare}, view_case{"memtrail", view_kind::ranks}),
    case_name);

// Every way of stacking the timeline draws within the same per-pixel budget, on both files.
TEST(view, the_timeline_stacks_by_category_stack_allocation_and_segment) {
    for (const auto* doc : {&torch_document(), &memtrail_document()}) {
        for (const char* stacking : {"category", "stack", "allocation", "segment"}) {
            SCOPED_TRACE(stacking);
            headless_frame frame(width, height);
            view v(*doc);
            v.show(view_kind::timeline);
            ASSERT_TRUE(v.stack_timeline_by(stacking));
            const ImDrawData& data = settle(frame, v);
            EXPECT_GT(data.TotalVtxCount, 1000);
            EXPECT_LT(data.TotalVtxCount, 4 * 12 * width + 200000);
        }
    }
    view v(torch_document());
    EXPECT_FALSE(v.stack_timeline_by("weight"));
}

TEST(view_kind, names_round_trip) {
    for (int i = 0; i < view_kind_count; ++i) {
        const auto kind = static_cast<view_kind>(i);
        view_kind parsed{};
        ASSERT_TRUE(parse_view_kind(view_kind_name(kind), parsed));
        EXPECT_EQ(parsed, kind);
    }
    view_kind ignored{};
    EXPECT_FALSE(parse_view_kind("memory", ignored));
}

TEST(view, moments_by_name_and_index) {
    view v(torch_document());
    const auto& model = torch_document()->devices.front().model;
    ASSERT_TRUE(v.select_moment("peak"));
    EXPECT_EQ(v.moment(), model.peak_position(analysis::series::allocated));
    ASSERT_TRUE(v.select_moment("12"));
    EXPECT_EQ(v.moment(), 13u);  // the state after entry 12
    ASSERT_TRUE(v.select_moment("end"));
    EXPECT_EQ(v.moment(), model.event_count());
    EXPECT_FALSE(v.select_moment("middle"));
    EXPECT_FALSE(v.select_moment("12x"));
    ASSERT_TRUE(v.select_moment("999999999"));
    EXPECT_EQ(v.moment(), model.event_count()) << "clamped to the trace";
}

TEST(view, arrow_keys_step_and_escape_clears) {
    headless_frame frame(width, height);
    ImGuiIO& io = ImGui::GetIO();
    // The key codes a backend would map; the GLFW backend uses these.
    io.KeyMap[ImGuiKey_LeftArrow] = 263;
    io.KeyMap[ImGuiKey_RightArrow] = 262;
    io.KeyMap[ImGuiKey_Escape] = 256;
    view v(torch_document());
    v.set_moment(100);
    v.set_allocation(0);
    v.set_range(std::pair<size_t, size_t>(50, 10));
    ASSERT_EQ(v.range()->first, 10u) << "a range is kept in order";
    settle(frame, v);

    auto press = [&](int key) {
        io.KeysDown[key] = true;
        draw_frame(frame, v);
        frame.end();
        io.KeysDown[key] = false;
        draw_frame(frame, v);
        frame.end();
    };
    press(262);
    EXPECT_EQ(v.moment(), 101u);
    press(263);
    press(263);
    EXPECT_EQ(v.moment(), 99u);
    press(256);
    EXPECT_FALSE(v.allocation().has_value());
    EXPECT_FALSE(v.range().has_value());
}

// A selected range drives every view: the flame graph shows what it allocated and kept, the
// segments its end with its changes marked, the events its entries, the legend its end and
// change; clearing it brings back the moment.
TEST(view, a_selected_range_drives_every_view) {
    headless_frame frame(width, height);
    view v(torch_document());
    ASSERT_TRUE(v.select_moment("end"));
    const std::pair<size_t, size_t> range(3000, 8426);  // growth up to the peak
    v.set_range(range);

    v.show(view_kind::flame);
    EXPECT_NE(settled_text(frame, v).find("allocated in the range and live at its end"),
              std::string::npos);

    v.show(view_kind::segments);
    std::string text = settled_text(frame, v);
    EXPECT_NE(text.find("at the end of the range entry 2999 .. entry 8425"), std::string::npos)
        << text;
    EXPECT_NE(text.find("4 segments reserved in the range"), std::string::npos) << text;
    EXPECT_NE(text.find("  new"), std::string::npos) << "the new segments' rows say so";
    // Beyond the legend's swatch of each colour (4 vertices), the marks along the bars: many
    // allocated by the growth to the peak, one span freed.
    const ImU32 allocated_mark = IM_COL32(220, 90, 80, 255);
    const ImU32 freed_mark = IM_COL32(80, 170, 110, 255);
    EXPECT_GT(vertices_of_color(settle(frame, v), allocated_mark), 4u * 4);
    EXPECT_GT(vertices_of_color(settle(frame, v), freed_mark), 4u);

    v.show(view_kind::events);
    text = settled_text(frame, v);
    EXPECT_NE(text.find("5,426 of 10,983 entries (in the selected range)"), std::string::npos)
        << text.substr(0, 600);

    v.show(view_kind::timeline);
    ASSERT_TRUE(v.stack_timeline_by("category"));
    text = settled_text(frame, v);
    EXPECT_NE(text.find("bytes at the end of the selected range"), std::string::npos);

    v.set_range(std::nullopt);
    v.show(view_kind::flame);
    text = settled_text(frame, v);
    EXPECT_EQ(text.find("allocated in the range"), std::string::npos);
    EXPECT_NE(text.find(" live in "), std::string::npos);
    v.show(view_kind::segments);
    text = settled_text(frame, v);
    EXPECT_EQ(text.find("at the end of the range"), std::string::npos);
    EXPECT_EQ(vertices_of_color(settle(frame, v), allocated_mark), 0u);
    v.show(view_kind::timeline);
    EXPECT_NE(settled_text(frame, v).find("bytes at the selected moment"), std::string::npos);
}

// The segment rows start on a line of their own below the legend, also when the device has no
// private pool and so no pool filter ends the legend's line (they used to start to its right).
TEST(view, the_segment_rows_start_below_the_legend) {
    headless_frame frame(width, height);
    view v(torch_document());
    v.show(view_kind::segments);
    const std::string text = settled_text(frame, v);
    const size_t hint = text.find("left/right: step entries");
    ASSERT_NE(hint, std::string::npos);
    const size_t first_row = text.find("0x", hint);
    ASSERT_NE(first_row, std::string::npos);
    EXPECT_LT(text.find('\n', hint), first_row) << text.substr(hint, 200);
}

// With a range selected every view of both files still draws within the per-pixel budget (the
// segments' marks are merged per pixel).
TEST(view, every_view_over_a_range_stays_within_the_pixel_budget) {
    for (const auto* doc : {&torch_document(), &memtrail_document()}) {
        headless_frame frame(width, height);
        view v(*doc);
        const size_t count = (*doc)->main_device().model.event_count();
        v.set_range(std::pair(count / 4, count * 3 / 4));
        v.compare_range_ends(true);
        for (int k = 0; k < view_kind_count; ++k) {
            SCOPED_TRACE(view_kind_name(static_cast<view_kind>(k)));
            v.show(static_cast<view_kind>(k));
            const ImDrawData& data = settle(frame, v);
            EXPECT_GT(data.TotalVtxCount, 200);
            EXPECT_LT(data.TotalVtxCount, 4 * 12 * width + 200000);
        }
    }
}

// The compare view sets the range's start against its end; without a range it says how to get
// one.
TEST(view, the_compare_view_compares_the_ranges_start_with_its_end) {
    headless_frame frame(width, height);
    view v(torch_document());
    v.show(view_kind::compare);
    v.compare_range_ends(true);
    ASSERT_TRUE(v.comparing_range_ends());
    EXPECT_NE(settled_text(frame, v).find("Select a range on the timeline"), std::string::npos);

    v.set_range(std::pair<size_t, size_t>(3000, 8426));
    const std::string text = settled_text(frame, v);
    EXPECT_NE(text.find("at entry 2999"), std::string::npos) << text.substr(0, 600);
    EXPECT_NE(text.find("at entry 8425"), std::string::npos);
    EXPECT_NE(text.find("this trace at the range's start"), std::string::npos);
    EXPECT_GT(settle(frame, v).TotalVtxCount, 1000) << "the differential graph is drawn";

    v.compare_range_ends(false);
    EXPECT_NE(settled_text(frame, v).find("Open a second snapshot"), std::string::npos);
}

TEST(view, a_click_in_the_timeline_selects_that_moment_and_the_wheel_zooms) {
    headless_frame frame(width, height);
    ImGuiIO& io = ImGui::GetIO();
    view v(torch_document());
    settle(frame, v);
    const size_t end = torch_document()->devices.front().model.event_count();
    // The plot spans the width below the controls; its middle is about the trace's middle.
    io.MousePos = ImVec2(width / 2.0f, height * 0.7f);
    io.MouseDown[0] = true;
    draw_frame(frame, v);
    frame.end();
    io.MouseDown[0] = false;
    draw_frame(frame, v);
    frame.end();
    EXPECT_GT(v.moment(), end / 4);
    EXPECT_LT(v.moment(), end * 3 / 4);

    // Zoomed in around the same place, the same click lands on nearly the same moment.
    const size_t clicked = v.moment();
    io.MouseWheel = 5;
    draw_frame(frame, v);
    frame.end();
    io.MouseWheel = 0;
    v.set_moment(0);
    io.MouseDown[0] = true;
    draw_frame(frame, v);
    frame.end();
    io.MouseDown[0] = false;
    draw_frame(frame, v);
    frame.end();
    const size_t again = v.moment();
    EXPECT_LT(again > clicked ? again - clicked : clicked - again, end / 100);
}

TEST(document, every_allocation_entry_finds_its_lifetime) {
    for (const auto* doc : {torch_document().get(), memtrail_document().get()}) {
        for (const device_document& d : doc->devices) {
            const auto& lifetimes = d.model.lifetimes();
            size_t checked = 0;
            for (size_t i = 0; i < d.model.event_count(); ++i) {
                const snapshot::trace_entry& e = d.model.entry(i);
                if (e.kind != snapshot::action::alloc) {
                    continue;
                }
                const std::optional<size_t> life = d.allocation_of_entry(i);
                ASSERT_TRUE(life.has_value()) << doc->name << " entry " << i;
                EXPECT_EQ(lifetimes[*life].begin, i + 1);
                EXPECT_EQ(lifetimes[*life].address, e.address);
                ++checked;
            }
            EXPECT_GT(checked, 0u) << doc->name;
        }
    }
}

TEST(document, memtrail_snapshot_has_annotations_streams_and_ooms) {
    const device_document& d = memtrail_document()->devices.front();
    EXPECT_FALSE(d.annotation_lanes.empty());
    EXPECT_GE(d.streams.size(), 1u);
    EXPECT_FALSE(d.oom_entries.empty());
    for (const auto& lane : d.annotation_lanes) {
        for (size_t i = 1; i < lane.size(); ++i) {
            EXPECT_LE(lane[i - 1].last, lane[i].first) << "ranges in a lane do not overlap";
        }
    }
}

TEST(document, pytorch_tags_are_lanes_beside_the_annotations) {
    // Compiled AdamW training recorded with compile_context=True and _set_memory_metadata.
    const auto doc = load(std::string(MEMTRAIL_UNPACKED_TRACES) + "/compile_tags.pickle");
    const device_document& d = doc->devices.front();
    std::set<std::pair<range_source, std::string>> seen;
    for (const auto& lane : d.annotation_lanes) {
        for (size_t i = 0; i < lane.size(); ++i) {
            seen.insert({lane[i].source, std::string(doc->source->string_at(lane[i].name))});
            if (i > 0) {
                EXPECT_LE(lane[i - 1].last, lane[i].first) << "ranges in a lane do not overlap";
            }
        }
    }
    for (const char* step : {"train step 0", "train step 1", "train step 2"}) {
        EXPECT_TRUE(seen.contains({range_source::user_metadata, step})) << step;
    }
    EXPECT_TRUE(seen.contains({range_source::compile_context, "Torch-Compiled Region: 0/0"}));
    EXPECT_TRUE(seen.contains({range_source::annotation, "step 1"}));
}

// Frames until every load of `ws` has finished.
void draw_until_loaded(headless_frame& frame, workspace& ws) {
    while (ws.loading()) {
        frame.begin();
        ws.draw();
        frame.end();
        std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
}

TEST(workspace, loads_in_the_background_in_opening_order) {
    headless_frame frame(width, height);
    workspace ws;
    ws.open(MEMTRAIL_TEST_SNAPSHOT);
    ws.open(MEMTRAIL_TEST_TORCH_PICKLE);
    ws.open("/nonexistent/file.pickle");
    draw_until_loaded(frame, ws);
    const std::vector<view*> views = ws.views();
    ASSERT_EQ(views.size(), 2u);
    EXPECT_EQ(views[0]->doc().name, "viewer_test.memtrail");
    EXPECT_EQ(views[1]->doc().name, "transformer__default.pickle");
    ASSERT_EQ(ws.errors().size(), 1u);
    EXPECT_NE(ws.errors()[0].find("/nonexistent/file.pickle"), std::string::npos);
}

// The first picture comes before the document: a load held there has its preview (the models'
// curves, the same as the document's) and is not done until released; the window draws it.
TEST(workspace, a_load_shows_its_memory_curves_before_it_completes) {
    headless_frame frame(width, height);
    workspace ws;
    ws.hold_loads_at_preview();
    ws.open(MEMTRAIL_TEST_TORCH_PICKLE);
    while (!ws.previews_ready()) {
        std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
    frame.begin();
    ws.draw();
    const ImDrawData& drawn = frame.end();
    EXPECT_TRUE(ws.loading());
    EXPECT_TRUE(ws.views().empty());
    EXPECT_GT(drawn.TotalVtxCount, 4 * width);  // the curves: a rectangle per pixel column each

    load_job job(MEMTRAIL_TEST_TORCH_PICKLE, analysis::frame_visibility::user_frames,
                 load_hold::at_preview);
    while (job.preview() == nullptr) {
        std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    EXPECT_FALSE(job.done());
    const std::shared_ptr<const load_preview> preview = job.preview();
    job.release();
    while (!job.done()) {
        std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
    const std::shared_ptr<const document> doc = job.result();
    ASSERT_NE(doc, nullptr);
    EXPECT_EQ(preview->name, "transformer__default.pickle");
    EXPECT_EQ(preview->main_model().values(analysis::series::allocated),
              doc->main_device().model.values(analysis::series::allocated));

    ws.release_loads();
    draw_until_loaded(frame, ws);
    EXPECT_EQ(ws.views().size(), 1u);
}

// A pickle whose one allocation has a C++ stack as PyTorch records it: its unwinder and
// allocator, then the user's Python frame.
std::string write_cpp_stack_pickle() {
    snapshot::snapshot s;
    auto frame = [&](const char* function, const char* file, snapshot::frame_kind kind) {
        snapshot::frame f;
        f.function = s.intern_string(function);
        f.filename = s.intern_string(file);
        f.kind = kind;
        return s.intern_frame(f);
    };
    const auto stack = s.intern_stack(
        {frame("torch::unwind::unwind()", "unwind.cpp", snapshot::frame_kind::native),
         frame("c10::cuda::CUDACachingAllocator::Native::DeviceCachingAllocator::malloc", "",
               snapshot::frame_kind::native),
         frame("forward", "/work/model.py", snapshot::frame_kind::python)});
    snapshot::segment seg;
    seg.address = 1 << 20;
    seg.total_size = 2 << 20;
    seg.allocated_size = seg.active_size = seg.requested_size = 2 << 20;
    seg.blocks.push_back(
        {seg.address, 2 << 20, 2 << 20, snapshot::block_state::active_allocated, stack, 0});
    s.segments.push_back(seg);
    const auto path = std::filesystem::temp_directory_path() /
                      ("memtrail_viewer_cpp_stack_" + std::to_string(::getpid()) + ".pickle");
    snapshot::write_torch_pickle(s, path);
    return path.string();
}

// A snapshot with a segment of the default pools and one of a CUDA graph's private pool: the
// segment and timeline views draw the pool filter and the pools.
TEST(every_view, segments_and_timeline_show_private_pools) {
    snapshot::snapshot s;
    for (const uint64_t pool_first : {0, 3}) {
        snapshot::segment seg;
        seg.address = (pool_first + 1) << 24;
        seg.total_size = 2 << 20;
        seg.pool_id_first = pool_first;
        seg.allocated_size = seg.active_size = seg.requested_size = 1 << 20;
        seg.blocks.push_back({seg.address, 1 << 20, 1 << 20,
                              snapshot::block_state::active_allocated, snapshot::no_id, 0});
        seg.blocks.push_back({seg.address + (1 << 20), 1 << 20, 0, snapshot::block_state::inactive,
                              snapshot::no_id, 0});
        s.segments.push_back(seg);
    }
    const auto path = std::filesystem::temp_directory_path() /
                      ("memtrail_viewer_pools_" + std::to_string(::getpid()) + ".pickle");
    snapshot::write_torch_pickle(s, path);
    const auto doc = load(path.string());
    ASSERT_TRUE(doc);
    headless_frame frame(width, height);
    for (const view_kind kind : {view_kind::segments, view_kind::timeline}) {
        view v(doc);
        v.show(kind);
        const ImDrawData& data = settle(frame, v);
        EXPECT_GT(data.TotalVtxCount, 100) << view_kind_name(kind);
    }
    std::filesystem::remove(path);
}

// A real OOM (PyTorch 2.11): a live CUDA graph's pool held a free 256 MiB segment when a 256 MiB
// request failed under a cap. The OOM and Segments views name the pool with its owner, and they
// and the events name the streams by their short names, never by their raw handles.
TEST(every_view, the_oom_segments_and_events_views_name_a_graphs_pool_and_short_streams) {
    const auto doc = load(std::string(MEMTRAIL_UNPACKED_TRACES) + "/oom_graph_pool.pickle");
    ASSERT_TRUE(doc);
    headless_frame frame(width, height);
    view v(doc);
    ASSERT_TRUE(v.select_moment("62"));
    v.show(view_kind::oom);
    std::string text = settled_text(frame, v);
    EXPECT_NE(text.find("Verdict: private pools (secondary: memory cap)"), std::string::npos)
        << text;
    EXPECT_NE(text.find("a CUDA graph's own pool (capture 1)"), std::string::npos) << text;
    EXPECT_NE(text.find("on stream 0, large pool"), std::string::npos) << text;
    EXPECT_NE(text.find("stream 2"), std::string::npos) << text;
    EXPECT_NE(text.find("at least"), std::string::npos) << "the device size assumed: " << text;
    EXPECT_EQ(text.find("477141664"), std::string::npos) << text;

    v.show(view_kind::segments);
    text = settled_text(frame, v);
    // The graph's four segments; the final snapshot names the pool of one, the stream the rest.
    const auto count = [&](std::string_view what) {
        size_t n = 0;
        for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) {
            ++n;
        }
        return n;
    };
    EXPECT_EQ(count("pool (1, 0) CUDA graph"), 4u) << text;
    EXPECT_EQ(count("pool (1, 0) CUDA graph~"), 3u) << text;

    v.show(view_kind::events);
    text = settled_text(frame, v);
    EXPECT_NE(text.find("stream 1"), std::string::npos) << text;
    EXPECT_EQ(text.find("474931344"), std::string::npos) << text;
    EXPECT_EQ(text.find("477141664"), std::string::npos) << text;
}

TEST(workspace, pytorchs_own_frames_are_hidden_until_the_view_menu_shows_them) {
    const std::string path = write_cpp_stack_pickle();
    headless_frame frame(width, height);
    workspace ws;
    auto innermost = [&]() {
        draw_until_loaded(frame, ws);
        const std::vector<view*> views = ws.views();
        EXPECT_EQ(views.size(), 1u);
        const snapshot::snapshot& source = *views.front()->doc().source;
        const auto& frames = source.stack_at(source.segments.front().blocks.front().stack);
        return std::string(source.string_at(source.frame_at(frames.front()).function));
    };
    ws.open(path);
    EXPECT_EQ(innermost(), "forward");
    ws.reopen_with(analysis::frame_visibility::all_frames);
    EXPECT_EQ(innermost(), "torch::unwind::unwind()");
    ws.reopen_with(analysis::frame_visibility::user_frames);
    EXPECT_EQ(innermost(), "forward");
    std::filesystem::remove(path);
}

// The categories' evidence (nn.Module._apply, the optimizer, autograd) is folded out of the
// stacks the views show: they are read from every frame all the same.
TEST(document, categories_read_every_frame_whatever_the_stacks_show) {
    const auto recorded = snapshot::load_snapshot(MEMTRAIL_TEST_TORCH_PICKLE).snapshot;
    load_progress progress;
    const auto folded = make_document(recorded, "folded", progress);
    const auto every =
        make_document(recorded, "every", progress, analysis::frame_visibility::all_frames);
    EXPECT_LT(folded->source->stacks().size(), every->source->stacks().size());
    const device_document& f = folded->main_device();
    const device_document& e = every->main_device();
    const size_t peak = f.overview.peak_allocated.position;
    const auto shown = analysis::categories_at(f.model, *f.categories, peak);
    const auto read = analysis::categories_at(e.model, *e.categories, peak);
    EXPECT_GT(read.totals[static_cast<size_t>(analysis::memory_category::parameter)].bytes, 0u);
    for (size_t c = 0; c < analysis::memory_category_count; ++c) {
        EXPECT_EQ(shown.totals[c].bytes, read.totals[c].bytes)
            << analysis::category_name(static_cast<analysis::memory_category>(c));
    }
}

TEST(format, entry_context_names_the_compile_context_and_the_metadata) {
    snapshot::snapshot s;
    snapshot::trace_entry e;
    EXPECT_EQ(format_entry_context(s, e), "");
    e.compile_context = s.intern_string("N/A");  // PyTorch's "none"
    EXPECT_EQ(format_entry_context(s, e), "");
    e.user_metadata = s.intern_string("step 3");
    EXPECT_EQ(format_entry_context(s, e), "step 3");
    e.compile_context = s.intern_string("0/1");
    EXPECT_EQ(format_entry_context(s, e), "compile 0/1, step 3");
}

TEST(file_dialog, lists_snapshot_files_by_their_names) {
    for (const char* name : {"run.memtrail", "run.memtrail.zst", "rank0.pickle", "OLD.PKL",
                             "a.b.Pickle", "rank0.pickle.summary.json"}) {
        EXPECT_TRUE(is_snapshot_file_name(name)) << name;
    }
    for (const char* name :
         {"notes.txt", "run.zst", "memtrail", "run.pickle.bak", ".pkl.txt", "memtrail.json", ""}) {
        EXPECT_FALSE(is_snapshot_file_name(name)) << name;
    }
}

TEST(rank_table, rows_report_each_models_peaks_in_rank_order) {
    // By position when the names give no ranks.
    const std::vector<rank_row> rows = rank_rows({memtrail_document(), torch_document()});
    ASSERT_EQ(rows.size(), 2u);
    EXPECT_EQ(rows[0].rank, 0);
    EXPECT_EQ(rows[0].doc, memtrail_document());
    EXPECT_EQ(rows[1].rank, 1);
    for (const rank_row& row : rows) {
        const analysis::device_model& model = row.device->model;
        EXPECT_EQ(row.device, &row.doc->main_device());
        EXPECT_GT(model.event_count(), 0u) << "the device with the trace is reported";
        const analysis::rank_overview& o = row.device->overview;
        for (const auto& [peak, s] : {std::pair{o.peak_allocated, analysis::series::allocated},
                                      std::pair{o.peak_reserved, analysis::series::reserved}}) {
            EXPECT_EQ(peak.position, model.peak_position(s)) << row.doc->name;
            EXPECT_EQ(peak.bytes, model.values(s)[model.peak_position(s)]) << row.doc->name;
        }
        EXPECT_EQ(o.end_reserved,
                  analysis::totals_of(model.state_after(model.event_count())).reserved);
    }
    EXPECT_EQ(rows[highest_reserved_peak(rows)].doc, torch_document());

    // By the ranks the names give, listed by rank.
    load_progress progress;
    const auto first = make_document(torch_document()->source, "run/rank1.pickle", progress);
    const auto second = make_document(memtrail_document()->source, "run/rank0.memtrail", progress);
    const std::vector<rank_row> named = rank_rows({first, second});
    ASSERT_EQ(named.size(), 2u);
    EXPECT_EQ(named[0].rank, 0);
    EXPECT_EQ(named[0].doc, second);
    EXPECT_EQ(named[1].rank, 1);
    EXPECT_EQ(named[1].doc, first);
}

TEST(rank_table, only_snapshots_of_the_shown_ones_job_are_its_ranks) {
    load_progress progress;
    const auto rank1 = make_document(torch_document()->source, "run/rank1.pickle", progress);
    const job_documents job =
        documents_of_job(torch_document(), {memtrail_document(), torch_document(), rank1});
    ASSERT_EQ(job.ranks.size(), 2u);
    EXPECT_EQ(job.ranks[0], torch_document());
    EXPECT_EQ(job.ranks[1], rank1);
    ASSERT_EQ(job.others.size(), 1u);
    EXPECT_EQ(job.others[0].first, memtrail_document());
    EXPECT_NE(job.others[0].second.find("written by"), std::string::npos) << job.others[0].second;

    // The shown snapshot is always its own job's rank, even when not among the open ones.
    const job_documents alone = documents_of_job(memtrail_document(), {});
    ASSERT_EQ(alone.ranks.size(), 1u);
    EXPECT_EQ(alone.ranks[0], memtrail_document());
}

TEST(rank_table, files_named_as_another_jobs_ranks_are_not_its_ranks) {
    // The same snapshot under three names: two name ranks of job "a", one of job "b". Their
    // contents cannot tell them apart; their names can.
    load_progress progress;
    const auto a0 = make_document(torch_document()->source, "run/a__rank0.pickle", progress);
    const auto a1 = make_document(torch_document()->source, "run/a__rank1.pickle", progress);
    const auto b1 = make_document(torch_document()->source, "run/b__rank1.pickle", progress);
    EXPECT_FALSE(a0->stack_fingerprints.empty());
    const job_documents job = documents_of_job(a1, {a0, b1, a1});
    ASSERT_EQ(job.ranks.size(), 2u);
    EXPECT_EQ(job.ranks[0], a0) << "in opening order";
    EXPECT_EQ(job.ranks[1], a1);
    ASSERT_EQ(job.others.size(), 1u);
    EXPECT_EQ(job.others[0].first, b1);
    EXPECT_EQ(job.others[0].second, "named as another job (b__rank*.pickle, not a__rank*.pickle)");
}

TEST(workspace, the_ranks_view_shows_the_jobs_snapshots_and_a_click_picks_one) {
    headless_frame frame(width, height);
    ImGuiIO& io = ImGui::GetIO();
    workspace ws;
    load_progress progress;
    view& first = ws.add(torch_document());
    ws.add(memtrail_document());  // of another job: no row of its own
    view& second = ws.add(make_document(torch_document()->source, "run/rank1.pickle", progress));
    first.show(view_kind::ranks);
    ws.select(first);
    auto draw = [&] {
        frame.begin();
        ws.draw();
        return frame.end().TotalVtxCount;
    };
    int vertices = 0;
    for (int i = 0; i < 4; ++i) {
        vertices = draw();
    }
    ASSERT_EQ(ws.active(), &first);
    EXPECT_GT(vertices, 1000) << "the ranks view drew almost nothing";
    EXPECT_LT(vertices, 4 * 12 * width + 200000);

    // Click down the left edge below the feature tabs, where the rank numbers are: the first
    // row is this snapshot's own, the second makes the other one active, on its Ranks tab.
    float clicked_at = 0;
    for (float y = 150; y < height / 2.0f && ws.active() == &first; y += 4) {
        io.MousePos = ImVec2(24, y);
        io.MouseDown[0] = true;
        draw();
        io.MouseDown[0] = false;
        draw();
        draw();
        draw();
        clicked_at = y;
    }
    EXPECT_EQ(ws.active(), &second) << "no row picked the second snapshot";
    EXPECT_EQ(second.shown(), view_kind::ranks);
    EXPECT_GT(clicked_at, 150.0f) << "the first row, this snapshot's own, changes nothing";
}

}  // namespace
}  // namespace memtrail::viewer

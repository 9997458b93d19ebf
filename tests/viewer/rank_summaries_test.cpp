// The Ranks view of many ranks, headless: rank summaries of real DDP ranks (jobs.tar.gz's
// ddp__rank0 and ddp__rank1, one rank made different) ranked and ordered as `memtrail ranks`
// orders them, two jobs drawn as two sections, a folder of snapshots summarized in the
// background, a click opening the rank's snapshot as the active tab, a moved snapshot and a bad
// summary said in the view.

#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include <imgui_internal.h>
#include <unistd.h>

#include "memtrail/analysis/device_model.hpp"
#include "memtrail/analysis/rank_summary.hpp"
#include "memtrail/snapshot/load.hpp"
#include "memtrail/viewer/headless_frame.hpp"
#include "memtrail/viewer/rank_heatmap.hpp"
#include "memtrail/viewer/rank_summaries.hpp"
#include "memtrail/viewer/rank_summaries_view.hpp"
#include "memtrail/viewer/workspace.hpp"

namespace memtrail::viewer {
namespace {

namespace fs = std::filesystem;

constexpr int width = 1280;
constexpr int height = 800;

std::string trace(const std::string& name) {
    return std::string(MEMTRAIL_UNPACKED_TRACES) + "/" + name;
}

analysis::rank_summary summary_of(const std::string& path) {
    const snapshot::loaded_snapshot loaded = snapshot::load_snapshot(path);
    return analysis::summarize_rank(loaded.snapshot, analysis::devices_of(*loaded.snapshot).front(),
                                    path, "PyTorch pickle");
}

// `count` ranks of one job named as make_rank_files names them: every rank DDP's rank 0, rank
// `different` its rank 1.
std::vector<analysis::rank_summary> job_of(size_t count, int different, const std::string& job) {
    static const analysis::rank_summary base = summary_of(trace("ddp__rank0.pickle"));
    static const analysis::rank_summary other = summary_of(trace("ddp__rank1.pickle"));
    std::vector<analysis::rank_summary> out;
    for (int r = 0; r < static_cast<int>(count); ++r) {
        analysis::rank_summary s = r == different ? other : base;
        s.path = job + "/rank" + std::to_string(r) + ".pickle";
        s.identity.rank = r;
        s.identity.job_id = job;
        s.identity.source = analysis::identity_source::snapshot;
        out.push_back(std::move(s));
    }
    return out;
}

rank_summary_set set_of(std::vector<analysis::rank_summary> summaries) {
    rank_summary_set set;
    for (const analysis::rank_summary& s : summaries) {
        set.files.push_back(s.path + ".summary.json");
    }
    set.summaries = std::move(summaries);
    set.ranking = analysis::analyze_ranks(set.summaries);
    return set;
}

// The text a frame of `v` shows (ImGui's log of the text items).
std::string frame_text(headless_frame& frame, rank_summaries_view& v) {
    frame.begin();
    ImGui::SetNextWindowPos(ImVec2(0, 0));
    ImGui::SetNextWindowSize(ImGui::GetIO().DisplaySize);
    ImGui::Begin("ranks", nullptr, ImGuiWindowFlags_NoDecoration);
    ImGui::LogToBuffer();
    v.draw();
    std::string text = ImGui::GetCurrentContext()->LogBuffer.c_str();
    ImGui::LogFinish();
    ImGui::End();
    frame.end();
    return text;
}

TEST(rank_heatmap, the_outlier_comes_first_then_every_other_rank_in_rank_order) {
    const rank_summary_set set = set_of(job_of(40, 23, "job-a"));
    const rank_heatmap heatmap = build_rank_heatmap(set);
    ASSERT_EQ(heatmap.sections.size(), 1u);
    const analysis::job_ranking& job = set.ranking.jobs.front();
    ASSERT_EQ(job.outliers.size(), 1u) << "memtrail ranks finds rank 23 alone";
    const std::vector<heatmap_row>& rows = heatmap.sections[0].rows;
    ASSERT_EQ(rows.size(), 40u);
    EXPECT_EQ(rows[0].rank, 23);
    EXPECT_EQ(rows[0].outlier, 0u);
    EXPECT_EQ(rows[0].distance, job.standings[job.outliers[0].member].distance);
    EXPECT_GT(rows[0].distance, analysis::outlier_cut);
    int expected = 0;
    for (size_t i = 1; i < rows.size(); ++i, ++expected) {
        expected += expected == 23 ? 1 : 0;
        EXPECT_EQ(rows[i].rank, expected) << "row " << i;
        EXPECT_FALSE(rows[i].outlier);
        EXPECT_EQ(set.summaries[rows[i].summary].identity.rank, rows[i].rank);
    }
    uint64_t most = 0;
    for (const analysis::curve_point& p : set.summaries[rows[0].summary].curve) {
        most = std::max(most, p.allocated);
    }
    EXPECT_GE(heatmap.largest_allocated, most) << "one scale for every rank";
}

TEST(rank_heatmap, outliers_are_listed_as_memtrail_ranks_explains_them_the_farthest_first) {
    // Two ranks of DDP's rank 1 among rank 0's: both outliers, in the ranking's order.
    std::vector<analysis::rank_summary> summaries = job_of(30, 4, "job-a");
    summaries[17] = job_of(30, 17, "job-a")[17];
    const rank_summary_set set = set_of(std::move(summaries));
    const analysis::job_ranking& job = set.ranking.jobs.front();
    ASSERT_EQ(job.outliers.size(), 2u);
    const rank_heatmap heatmap = build_rank_heatmap(set);
    const std::vector<heatmap_row>& rows = heatmap.sections[0].rows;
    for (size_t o = 0; o < 2; ++o) {
        EXPECT_EQ(rows[o].rank, job.job.ranks[job.outliers[o].member]);
        EXPECT_EQ(rows[o].outlier, o);
    }
    EXPECT_FALSE(rows[2].outlier);
}

TEST(rank_heatmap, a_rows_cells_follow_its_curve_on_the_shared_scale) {
    analysis::rank_summary s;
    s.entries = 99;  // positions 0 to 99
    s.curve = {{0, 0, 0}, {50, 1000, 1000}};
    // A scale up to 1000 over 200 positions: this rank fills the first half of the columns.
    const std::vector<heatmap_run> runs = heatmap_row_runs(s, 1000, 200, 100);
    ASSERT_EQ(runs.size(), 2u);
    EXPECT_EQ(runs[0].first_column, 0u);
    EXPECT_EQ(runs[0].end_column, 25u);
    EXPECT_EQ(runs[0].level, 0);
    EXPECT_EQ(runs[1].first_column, 25u);
    EXPECT_EQ(runs[1].end_column, 50u) << "nothing past the rank's last position";
    EXPECT_EQ(runs[1].level, heatmap_levels - 1);
    // Half the scale's top is half way up the levels.
    EXPECT_EQ(heatmap_row_runs(s, 2000, 200, 100)[1].level, heatmap_levels / 2);
    EXPECT_EQ(curve_point_at(s, 49), 0u);
    EXPECT_EQ(curve_point_at(s, 50), 1u);
    EXPECT_EQ(curve_point_at(s, 99), 1u);
    EXPECT_EQ(curve_point_at(s, 100), std::nullopt);
}

TEST(rank_summaries_view, two_jobs_are_two_sections_each_with_its_outlier_first) {
    std::vector<analysis::rank_summary> summaries = job_of(12, 3, "job-a");
    for (analysis::rank_summary& s : job_of(8, 5, "job-b")) {
        summaries.push_back(std::move(s));
    }
    rank_summaries_view v(std::make_shared<const rank_summary_set>(set_of(std::move(summaries))));
    ASSERT_EQ(v.heatmap().sections.size(), 2u);
    EXPECT_EQ(v.heatmap().sections[0].rows.front().rank, 3);
    EXPECT_EQ(v.heatmap().sections[1].rows.front().rank, 5);
    headless_frame frame(width, height);
    frame_text(frame, v);
    const std::string text = frame_text(frame, v);
    EXPECT_NE(text.find("20 ranks from rank summaries"), std::string::npos) << text;
    EXPECT_NE(text.find("job 1 of 2: job-a, 12 ranks"), std::string::npos) << text;
    EXPECT_NE(text.find("job 2 of 2: job-b, 8 ranks"), std::string::npos) << text;
    EXPECT_NE(text.find("1 outlier (more than 3.5 robust deviations from the median): rank 3"),
              std::string::npos)
        << text;
    EXPECT_NE(text.find("1 outlier (more than 3.5 robust deviations from the median): rank 5"),
              std::string::npos)
        << text;
    // The explanation, as memtrail ranks gives it for the other DDP rank.
    EXPECT_NE(text.find("gradient -318MiB"), std::string::npos) << text;
    EXPECT_TRUE(v.row_on_screen(0, 3));
    EXPECT_TRUE(v.row_on_screen(1, 5));
}

TEST(rank_summaries_view, a_thousand_rows_draw_only_what_is_in_sight) {
    rank_summaries_view v(std::make_shared<const rank_summary_set>(set_of(job_of(1000, 500, "a"))));
    headless_frame frame(width, height);
    for (int i = 0; i < 3; ++i) {
        frame.begin();
        ImGui::SetNextWindowPos(ImVec2(0, 0));
        ImGui::SetNextWindowSize(ImGui::GetIO().DisplaySize);
        ImGui::Begin("ranks", nullptr, ImGuiWindowFlags_NoDecoration);
        v.draw();
        ImGui::End();
        const ImDrawData& data = frame.end();
        if (i == 2) {
            // One rectangle per run of a colour, the 999 ranks that did the same as one block:
            // a few thousand vertices, where a rectangle per cell of every row in sight would be
            // hundreds of thousands.
            EXPECT_GT(data.TotalVtxCount, 1000);
            EXPECT_LT(data.TotalVtxCount, 20000);
        }
    }
    EXPECT_TRUE(v.row_on_screen(0, 500)) << "the outlier's row is in sight, first";
    EXPECT_TRUE(v.row_on_screen(0, 0));
    EXPECT_FALSE(v.row_on_screen(0, 999)) << "the last rows are scrolled away, not drawn";
}

// A folder of four DDP ranks as snapshots: rank 2 is DDP's rank 1.
fs::path snapshot_folder(const std::string& name) {
    const fs::path folder = fs::temp_directory_path() /
                            ("memtrail-viewer-ranks-" + name + "-" + std::to_string(getpid()));
    fs::remove_all(folder);
    fs::create_directories(folder);
    for (int r = 0; r < 4; ++r) {
        fs::copy_file(trace(r == 2 ? "ddp__rank1.pickle" : "ddp__rank0.pickle"),
                      folder / ("rank" + std::to_string(r) + ".pickle"));
    }
    return folder;
}

struct workspace_frames {
    headless_frame frame{width, height};
    workspace ws;
    void draw() {
        frame.begin();
        ws.draw();
        frame.end();
    }
    void settle() {
        for (int i = 0; i < 2000 && ws.busy(); ++i) {
            draw();
            std::this_thread::sleep_for(std::chrono::milliseconds(5));
        }
        ASSERT_FALSE(ws.busy());
        for (int i = 0; i < 3; ++i) {
            draw();
        }
    }
    void click(float x, float y) {
        ImGuiIO& io = ImGui::GetIO();
        io.MousePos = ImVec2(x, y);
        draw();
        io.MouseDown[0] = true;
        draw();
        io.MouseDown[0] = false;
        draw();
    }
};

TEST(workspace, a_folder_of_snapshots_is_summarized_and_a_click_opens_a_ranks_snapshot) {
    const fs::path folder = snapshot_folder("click");
    workspace_frames w;
    w.ws.open(std::vector<std::string>{folder.string()});
    w.settle();
    ASSERT_TRUE(w.ws.errors().empty()) << w.ws.errors().front();
    const rank_summaries_view* ranks = w.ws.rank_summaries();
    ASSERT_NE(ranks, nullptr);
    ASSERT_EQ(ranks->set().summaries.size(), 4u);
    EXPECT_EQ(ranks->heatmap().sections[0].rows.front().rank, 2) << "the outlier first";
    EXPECT_TRUE(w.ws.views().empty()) << "no snapshot opened before a click";

    const auto at = ranks->row_on_screen(0, 2);
    ASSERT_TRUE(at);
    w.click(at->first, at->second);
    w.settle();
    ASSERT_EQ(w.ws.views().size(), 1u);
    ASSERT_NE(w.ws.active(), nullptr) << "the rank's snapshot is the active tab";
    EXPECT_EQ(w.ws.active()->doc().path, (folder / "rank2.pickle").string());

    // A rank whose snapshot moved away: said in the view, nothing opened.
    w.ws.show_rank_summaries();
    w.draw();
    w.draw();
    fs::remove(folder / "rank1.pickle");
    const auto row1 = w.ws.rank_summaries()->row_on_screen(0, 1);
    ASSERT_TRUE(row1);
    w.click(row1->first, row1->second);
    w.settle();
    EXPECT_EQ(w.ws.views().size(), 1u);
    const std::string& missing = w.ws.rank_summaries()->missing_snapshot();
    EXPECT_NE(missing.find("rank 1's snapshot is not there: " + (folder / "rank1.pickle").string()),
              std::string::npos)
        << missing;
    fs::remove_all(folder);
}

TEST(workspace, a_bad_summary_is_named_with_why_and_the_other_ranks_still_show) {
    const fs::path folder = snapshot_folder("bad");
    std::ofstream(folder / "rank9.pickle.summary.json") << "{\"format\": \"something else\"}";
    workspace_frames w;
    w.ws.open((folder / "rank9.pickle.summary.json").string());
    w.ws.open(folder.string());
    w.settle();
    const std::string bad = (folder / "rank9.pickle.summary.json").string() +
                            ": not a rank summary (docs/ranks.md): format: expected 'memtrail "
                            "rank summary', got 'something else'";
    ASSERT_EQ(w.ws.errors().size(), 2u) << "once per set it was in";
    EXPECT_EQ(w.ws.errors()[0], bad);
    ASSERT_NE(w.ws.rank_summaries(), nullptr);
    EXPECT_EQ(w.ws.rank_summaries()->set().summaries.size(), 4u);

    w.ws.open((folder / "gone.summary.json").string());
    w.settle();
    EXPECT_EQ(w.ws.errors().back(),
              (folder / "gone.summary.json").string() + ": no such file or folder");
    fs::remove_all(folder);
}

}  // namespace
}  // namespace memtrail::viewer

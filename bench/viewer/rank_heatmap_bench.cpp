// The Ranks view of many ranks, headless (CPU time; ImGui draw lists, no GL): 1,000 and 10,000
// rank summaries of a real DDP job (tests/data/traces/jobs.tar.gz's ddp__rank0, rank N/2 its
// ddp__rank1), ranked by analysis::analyze_ranks once, then
//   BM_BuildRankHeatmap       the heatmap's rows: sections, the outliers first, the scale
//   BM_RankViewFirstFrame     the view made and its first frame (each row in sight cut into
//                             runs of one colour at the frame's width)
//   BM_RankViewFrame          a frame after that (what hovering and scrolling cost)
// each with the ranks' curves alike (the job as recorded: ranks that did the same draw as one
// block) and made distinct (each rank's curve scaled by its own factor, up to 10%: every row in
// sight drawn on its own, the worst case). The budget is 16 ms, one frame at 60 Hz.
//
//   build/bin/bench_rank_heatmap

#include <benchmark/benchmark.h>

#include <memory>
#include <string>
#include <vector>

#include "memtrail/analysis/device_model.hpp"
#include "memtrail/snapshot/load.hpp"
#include "memtrail/viewer/headless_frame.hpp"
#include "memtrail/viewer/rank_summaries_view.hpp"

namespace {

using namespace memtrail;

constexpr int width = 1600;
constexpr int height = 900;

analysis::rank_summary summary_of(const std::string& name) {
    const std::string path = std::string(MEMTRAIL_UNPACKED_TRACES) + "/" + name;
    const snapshot::loaded_snapshot loaded = snapshot::load_snapshot(path);
    return analysis::summarize_rank(loaded.snapshot, analysis::devices_of(*loaded.snapshot).front(),
                                    path, "PyTorch pickle");
}

// `count` ranks, as make_rank_files makes them; `distinct`: each rank's curve its own.
std::shared_ptr<const viewer::rank_summary_set> ranks(size_t count, bool distinct) {
    static const analysis::rank_summary base = summary_of("ddp__rank0.pickle");
    static const analysis::rank_summary other = summary_of("ddp__rank1.pickle");
    auto set = std::make_shared<viewer::rank_summary_set>();
    for (size_t r = 0; r < count; ++r) {
        analysis::rank_summary s = r == count / 2 ? other : base;
        s.path = "job/rank" + std::to_string(r) + ".pickle";
        s.identity.rank = static_cast<int>(r);
        if (distinct) {
            const double factor = 0.9 + 0.1 * static_cast<double>((r * 37) % 101) / 100.0;
            for (analysis::curve_point& p : s.curve) {
                p.allocated = static_cast<uint64_t>(static_cast<double>(p.allocated) * factor);
            }
        }
        set->files.push_back(s.path + ".summary.json");
        set->summaries.push_back(std::move(s));
    }
    set->ranking = analysis::analyze_ranks(set->summaries);
    return set;
}

void draw(viewer::headless_frame& frame, viewer::rank_summaries_view& v) {
    frame.begin();
    ImGui::SetNextWindowPos(ImVec2(0, 0));
    ImGui::SetNextWindowSize(ImGui::GetIO().DisplaySize);
    ImGui::Begin("ranks", nullptr, ImGuiWindowFlags_NoDecoration);
    v.draw();
    ImGui::End();
    benchmark::DoNotOptimize(frame.end().TotalVtxCount);
}

void BM_BuildRankHeatmap(benchmark::State& state) {
    const auto set = ranks(static_cast<size_t>(state.range(0)), state.range(1) != 0);
    for (auto _ : state) {
        benchmark::DoNotOptimize(viewer::build_rank_heatmap(*set));
    }
}

void BM_RankViewFirstFrame(benchmark::State& state) {
    const auto set = ranks(static_cast<size_t>(state.range(0)), state.range(1) != 0);
    viewer::headless_frame frame(width, height);
    for (auto _ : state) {
        viewer::rank_summaries_view v(set);
        draw(frame, v);
    }
}

void BM_RankViewFrame(benchmark::State& state) {
    const auto set = ranks(static_cast<size_t>(state.range(0)), state.range(1) != 0);
    viewer::headless_frame frame(width, height);
    viewer::rank_summaries_view v(set);
    draw(frame, v);
    draw(frame, v);
    int vertices = 0;
    for (auto _ : state) {
        frame.begin();
        ImGui::SetNextWindowPos(ImVec2(0, 0));
        ImGui::SetNextWindowSize(ImGui::GetIO().DisplaySize);
        ImGui::Begin("ranks", nullptr, ImGuiWindowFlags_NoDecoration);
        v.draw();
        ImGui::End();
        vertices = frame.end().TotalVtxCount;
    }
    state.counters["vertices"] = vertices;
}

// {ranks, distinct curves}
#define RANK_SIZES ArgsProduct({{1000, 10000}, {0, 1}})->ArgNames({"ranks", "distinct"})
BENCHMARK(BM_BuildRankHeatmap)->RANK_SIZES->Unit(benchmark::kMillisecond);
BENCHMARK(BM_RankViewFirstFrame)->RANK_SIZES->Unit(benchmark::kMillisecond);
BENCHMARK(BM_RankViewFrame)->RANK_SIZES->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();

// `memtrail ranks` at scale, in the library: summarizing one real rank snapshot (a DDP rank of
// tests/data/traces/jobs.tar.gz, 1,606 allocations), with and without reading its file, and
// ranking 1,000 and 10,000 summaries of that job with one rank different. bench/analysis/
// ranks_scale.sh measures the same through the command, files included (docs/ranks.md).
//
//   build/bin/bench_ranks
//   MEMTRAIL_BENCH_RANK=run.pickle MEMTRAIL_BENCH_OTHER_RANK=other.pickle build/bin/bench_ranks

#include <benchmark/benchmark.h>

#include <cstdlib>
#include <string>
#include <vector>

#include "bench_support.hpp"
#include "memtrail/analysis/rank_outliers.hpp"
#include "memtrail/analysis/rank_summary.hpp"
#include "memtrail/snapshot/load.hpp"

namespace {

using namespace memtrail;

std::string trace_path(const char* variable, const char* name) {
    const char* given = std::getenv(variable);
    return given != nullptr ? given : std::string(MEMTRAIL_UNPACKED_TRACES) + "/" + name;
}

const std::string& rank_path() {
    static const std::string path = trace_path("MEMTRAIL_BENCH_RANK", "ddp__rank0.pickle");
    return path;
}

const std::string& other_rank_path() {
    static const std::string path = trace_path("MEMTRAIL_BENCH_OTHER_RANK", "ddp__rank1.pickle");
    return path;
}

analysis::rank_summary summary_of(const std::string& path) {
    const auto loaded = snapshot::load_snapshot(path);
    return analysis::summarize_rank(loaded.snapshot, 0, path, "torch-pickle");
}

// Snapshots to summaries: one snapshot, in memory, summarized per iteration.
void BM_SummarizeRank(benchmark::State& state) {
    const auto loaded = snapshot::load_snapshot(rank_path());
    for (auto _ : state) {
        benchmark::DoNotOptimize(
            analysis::summarize_rank(loaded.snapshot, 0, rank_path(), "torch-pickle"));
    }
    state.SetItemsProcessed(state.iterations());
    state.SetLabel("snapshots per second on one core");
}
BENCHMARK(BM_SummarizeRank)->Unit(benchmark::kMillisecond);

// The same with its file read and parsed each time: what a worker does per file.
void BM_ReadAndSummarizeRank(benchmark::State& state) {
    for (auto _ : state) {
        benchmark::DoNotOptimize(summary_of(rank_path()));
    }
    state.SetItemsProcessed(state.iterations());
    state.SetLabel("snapshots per second on one core, reading included");
}
BENCHMARK(BM_ReadAndSummarizeRank)->Unit(benchmark::kMillisecond);

// Summaries ranked: N ranks of one job, rank N/2 the other DDP rank.
void BM_AnalyzeRanks(benchmark::State& state) {
    const auto count = static_cast<size_t>(state.range(0));
    const analysis::rank_summary base = summary_of(rank_path());
    const analysis::rank_summary other = summary_of(other_rank_path());
    std::vector<analysis::rank_summary> summaries;
    summaries.reserve(count);
    for (size_t r = 0; r < count; ++r) {
        summaries.push_back(r == count / 2 ? other : base);
        summaries.back().path = "/shared/job/rank" + std::to_string(r) + ".pickle";
        summaries.back().identity.rank = static_cast<int>(r);
    }
    bench::reset_peak_memory();
    size_t outliers = 0;
    for (auto _ : state) {
        const analysis::ranks_analysis ranks = analysis::analyze_ranks(summaries);
        outliers = ranks.jobs.front().outliers.size();
        benchmark::DoNotOptimize(ranks);
    }
    state.SetItemsProcessed(state.iterations() * static_cast<int64_t>(count));
    state.counters["outliers"] = static_cast<double>(outliers);
    state.counters["peak_rss_MB"] = bench::peak_memory_bytes() / 1e6;
}
BENCHMARK(BM_AnalyzeRanks)->Arg(1000)->Arg(10000)->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();

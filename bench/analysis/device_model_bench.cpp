// The analysis at scale: loading a 10M-entry memtrail snapshot and building the model (target:
// at most 5 s and 4 GB), then the queries a viewer makes: the state at a random entry, a flame
// graph there, and a per-pixel timeline.
//
//   build/bin/bench_analysis --benchmark_filter=load_and_build
//
// Peak memory is the process's resident high-water mark (VmHWM), reset before the measured
// part, so generating and writing the file does not count.

#include <benchmark/benchmark.h>
#include <unistd.h>

#include <chrono>

#include <filesystem>
#include <memory>
#include <random>
#include <string>

#include "bench_support.hpp"
#include "memtrail/analysis/device_model.hpp"
#include "memtrail/analysis/flame.hpp"
#include "memtrail/analysis/timeline.hpp"
#include "memtrail/replay/synthetic_trace.hpp"
#include "memtrail/snapshot/load.hpp"
#include "memtrail/snapshot/msgpack_format.hpp"

namespace {

using namespace memtrail;

constexpr size_t large_trace = 10'000'000;

// The synthetic file, written once and removed when the program ends (every repetition of
// the benchmark reads it).
struct temporary_snapshot_file {
    temporary_snapshot_file()
        : path(std::filesystem::temp_directory_path() /
               ("memtrail_bench_analysis_" + std::to_string(getpid()) + ".mtrail")) {
        snapshot::write_snapshot(replay::make_stacked_history(large_trace), path);
    }
    ~temporary_snapshot_file() {
        std::error_code ignored;
        std::filesystem::remove(path, ignored);
    }
    std::filesystem::path path;
};

const std::filesystem::path& large_snapshot_file() {
    static const temporary_snapshot_file file;
    return file.path;
}

const analysis::device_model& large_model() {
    static const analysis::device_model model = analysis::device_model::build(
        std::make_shared<snapshot::snapshot>(replay::make_stacked_history(large_trace)), 0);
    return model;
}

void load_and_build(benchmark::State& state) {
    const auto& file = large_snapshot_file();
    for (auto _ : state) {
        bench::reset_peak_memory();
        const auto start = std::chrono::steady_clock::now();
        const snapshot::loaded_snapshot loaded = snapshot::load_snapshot(file);
        const auto loaded_at = std::chrono::steady_clock::now();
        const analysis::device_model model = analysis::device_model::build(loaded.snapshot, 0);
        const auto built_at = std::chrono::steady_clock::now();
        state.SetIterationTime(std::chrono::duration<double>(built_at - start).count());
        state.counters["load_s"] = std::chrono::duration<double>(loaded_at - start).count();
        state.counters["build_s"] = std::chrono::duration<double>(built_at - loaded_at).count();
        state.counters["peak_GB"] = bench::peak_memory_bytes() / 1e9;
        state.counters["entries"] = static_cast<double>(model.event_count());
        state.counters["anomalies"] = static_cast<double>(model.report().anomalies);
        state.counters["file_MB"] = static_cast<double>(std::filesystem::file_size(file)) / 1e6;
    }
}
BENCHMARK(load_and_build)->UseManualTime()->Iterations(1)->Unit(benchmark::kSecond);

void build_only(benchmark::State& state) {
    const auto snap = std::make_shared<snapshot::snapshot>(
        replay::make_stacked_history(static_cast<size_t>(state.range(0))));
    for (auto _ : state) {
        benchmark::DoNotOptimize(analysis::device_model::build(snap, 0));
    }
    state.SetItemsProcessed(state.iterations() * state.range(0));
}
BENCHMARK(build_only)->Arg(1'000'000)->Unit(benchmark::kMillisecond);

void state_at_random_entry(benchmark::State& state) {
    const analysis::device_model& model = large_model();
    std::mt19937_64 random(7);
    for (auto _ : state) {
        benchmark::DoNotOptimize(model.state_after(random() % model.event_count()));
    }
}
BENCHMARK(state_at_random_entry)->Unit(benchmark::kMicrosecond);

void flame_at_random_entry(benchmark::State& state) {
    const analysis::device_model& model = large_model();
    std::mt19937_64 random(8);
    for (auto _ : state) {
        benchmark::DoNotOptimize(analysis::flame_at(model, random() % model.event_count(),
                                                    analysis::live_measure::allocated));
    }
}
BENCHMARK(flame_at_random_entry)->Unit(benchmark::kMicrosecond);

void timeline_4k_pixels(benchmark::State& state) {
    const analysis::device_model& model = large_model();
    for (auto _ : state) {
        benchmark::DoNotOptimize(analysis::buckets_by_position(model, analysis::series::allocated,
                                                               0, model.event_count() + 1, 4096));
    }
}
BENCHMARK(timeline_4k_pixels)->Unit(benchmark::kMicrosecond);

}  // namespace

BENCHMARK_MAIN();

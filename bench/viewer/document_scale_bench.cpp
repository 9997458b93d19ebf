// A memtrail snapshot of 100M events opened as the viewer opens it, and what the views ask of it
// every frame (issue 16's target on the GPU host: it opens and stays interactive, the state at
// any event and frames under 16 ms, within 32 GB). No ImGui: the views' queries on the document
// (bench/viewer/view_frame_bench.cpp builds the frames themselves, where the viewer is built).
//
//   MEMTRAIL_BENCH_SNAPSHOT=/big/disk/100m.memtrail build/bin/bench_document_scale   # writes it
//   MEMTRAIL_BENCH_SNAPSHOT=/big/disk/100m.memtrail build/bin/bench_document_scale   # measures
//   MEMTRAIL_BENCH_EVENTS=20000000 build/bin/bench_document_scale    # another size, temporary file
//
// The snapshot is replay::make_stacked_history's (MEMTRAIL_BENCH_EVENTS entries, 100M by
// default), written to MEMTRAIL_BENCH_SNAPSHOT when that names a missing file (and kept), else
// to the temporary folder (and removed). Run it a second time on the kept file so that making
// the trace does not count in the process's peak: peak_GB is the resident high-water mark
// (VmHWM) from the start of opening, reset before it; maxrss_GB is getrusage's ru_maxrss of the
// whole process.

#include <benchmark/benchmark.h>
#include <sys/resource.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <random>
#include <string>

#include "bench_support.hpp"
#include "memtrail/analysis/categories.hpp"
#include "memtrail/analysis/flame.hpp"
#include "memtrail/analysis/timeline.hpp"
#include "memtrail/replay/synthetic_trace.hpp"
#include "memtrail/snapshot/msgpack_format.hpp"
#include "memtrail/viewer/document.hpp"

namespace {

using namespace memtrail;
using clock_type = std::chrono::steady_clock;

constexpr size_t pixel_columns = 1600;  // the views' width in view_frame_bench

double maxrss_bytes() {
    rusage usage{};
    getrusage(RUSAGE_SELF, &usage);
    return static_cast<double>(usage.ru_maxrss) * 1024.0;
}

const std::filesystem::path& file() {
    static const bench::bench_file f(
        "MEMTRAIL_BENCH_SNAPSHOT", "memtrail_bench_scale.memtrail",
        [](const std::filesystem::path& path) {
            const char* events = std::getenv("MEMTRAIL_BENCH_EVENTS");
            const size_t entries = events != nullptr ? std::stoull(events) : 100'000'000;
            snapshot::write_snapshot(replay::make_stacked_history(entries), path);
        });
    return f.path();
}

// The document, opened once by open_document and shared by the query benchmarks.
std::shared_ptr<const viewer::document>& opened() {
    static std::shared_ptr<const viewer::document> doc;
    return doc;
}

const viewer::document& document() {
    if (!opened()) {
        viewer::load_progress progress;
        opened() = viewer::load_document(file().string(), progress);
    }
    return *opened();
}

void open_document(benchmark::State& state) {
    const auto& path = file();
    for (auto _ : state) {
        opened().reset();
        bench::reset_peak_memory();
        const auto start = clock_type::now();
        viewer::load_progress progress;
        opened() = viewer::load_document(path.string(), progress);
        const double seconds = std::chrono::duration<double>(clock_type::now() - start).count();
        state.SetIterationTime(seconds);
        const double events = static_cast<double>(opened()->main_device().model.event_count());
        state.counters["events"] = events;
        state.counters["peak_GB"] = bench::peak_memory_bytes() / 1e9;
        state.counters["maxrss_GB"] = maxrss_bytes() / 1e9;
        state.counters["peak_bytes_per_event"] = bench::peak_memory_bytes() / events;
        state.counters["file_GB"] = static_cast<double>(std::filesystem::file_size(path)) / 1e9;
    }
}
BENCHMARK(open_document)->UseManualTime()->Iterations(1)->Unit(benchmark::kSecond);

const viewer::device_document& device() {
    return document().main_device();
}

void state_at_random_event(benchmark::State& state) {
    const analysis::device_model& model = device().model;
    std::mt19937_64 random(7);
    for (auto _ : state) {
        benchmark::DoNotOptimize(model.state_after(random() % model.event_count()));
    }
}
BENCHMARK(state_at_random_event)->Unit(benchmark::kMillisecond);

// The timeline's curves over the whole trace, one bucket per pixel column.
void timeline_whole_trace(benchmark::State& state) {
    const analysis::device_model& model = device().model;
    for (auto _ : state) {
        for (analysis::series s : {analysis::series::allocated, analysis::series::reserved}) {
            benchmark::DoNotOptimize(
                analysis::buckets_by_position(model, s, 0, model.event_count() + 1, pixel_columns));
        }
    }
}
BENCHMARK(timeline_whole_trace)->Unit(benchmark::kMillisecond);

// Zoomed in at a random place: the curves of a window of 100,000 positions.
void timeline_random_window(benchmark::State& state) {
    const analysis::device_model& model = device().model;
    std::mt19937_64 random(9);
    constexpr size_t window = 100'000;
    for (auto _ : state) {
        const size_t first = random() % (model.event_count() + 1 - window);
        for (analysis::series s : {analysis::series::allocated, analysis::series::reserved}) {
            benchmark::DoNotOptimize(
                analysis::buckets_by_position(model, s, first, first + window, pixel_columns));
        }
    }
}
BENCHMARK(timeline_random_window)->Unit(benchmark::kMillisecond);

// What the segments view and the tooltips look up at a moment: the allocation at an address.
void allocation_at_random_event(benchmark::State& state) {
    const viewer::device_document& d = device();
    std::mt19937_64 random(11);
    for (auto _ : state) {
        const size_t entry = random() % d.model.event_count();
        benchmark::DoNotOptimize(d.allocation_of_entry(entry));
    }
}
BENCHMARK(allocation_at_random_event)->Unit(benchmark::kMicrosecond);

// The category legend at a moment.
void categories_at_random_event(benchmark::State& state) {
    const viewer::device_document& d = device();
    std::mt19937_64 random(13);
    for (auto _ : state) {
        benchmark::DoNotOptimize(
            analysis::categories_at(d.model, *d.categories, random() % d.model.event_count()));
    }
}
BENCHMARK(categories_at_random_event)->Unit(benchmark::kMillisecond);

// The flame graph at a moment (computed off the UI thread in the viewer).
void flame_at_random_event(benchmark::State& state) {
    const analysis::device_model& model = device().model;
    std::mt19937_64 random(8);
    for (auto _ : state) {
        benchmark::DoNotOptimize(analysis::flame_at(model, random() % model.event_count(),
                                                    analysis::live_measure::allocated));
    }
}
BENCHMARK(flame_at_random_event)->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();

// Opening a 1M-entry PyTorch pickle with Python stacks the way the viewer opens it (issue 16's
// targets on the GPU host: the first picture within 1 s, fully loaded within 3 s, the
// categories within 1 s more), with the time split into the load's stages.
//
//   build/bin/bench_document_open                                  # synthetic, 1M entries
//   MEMTRAIL_BENCH_EVENTS=2000000 build/bin/bench_document_open    # synthetic, another size
//   MEMTRAIL_BENCH_PICKLE=/path/run.pickle build/bin/bench_document_open   # a real snapshot
//
// The synthetic pickle (python_stack_pickle.hpp) is written once to the temporary folder and
// removed at exit; when MEMTRAIL_BENCH_PICKLE names a file that does not exist, the synthetic
// pickle is written there and kept (for `python -m torch.cuda._memory_viz stats` on it). Times are
// wall clock of one load each (Iterations(1), repeat with
// --benchmark_repetitions): open_document is load_job's path (viewer/src/load_job.cpp), the
// stages benchmark runs its parts one by one on the same file (document: the device model again,
// then the categories beside the indices, and the search text). *_cpu_s counters are the
// process's CPU time, which a loaded machine does not inflate; *_faults the pages touched first.

#include <benchmark/benchmark.h>

#include <sys/resource.h>
#include <chrono>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <memory>
#include <string>
#include <thread>

#include "bench_support.hpp"
#include "memtrail/analysis/categories.hpp"
#include "memtrail/analysis/device_model.hpp"
#include "memtrail/analysis/frame_filter.hpp"
#include "memtrail/snapshot/load.hpp"
#include "memtrail/viewer/document.hpp"
#include "memtrail/viewer/load_job.hpp"
#include "python_stack_pickle.hpp"

namespace {

using namespace memtrail;
using clock_type = std::chrono::steady_clock;

double seconds_since(clock_type::time_point start) {
    return std::chrono::duration<double>(clock_type::now() - start).count();
}

// CPU time of the whole process (every thread), in seconds: on a loaded machine the wall clock
// also counts the time other programs ran.
double process_cpu_seconds() {
    timespec t{};
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
    return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_nsec) * 1e-9;
}

// Pages the process has touched for the first time (minor faults): memory fresh to a virtual
// machine can cost far more per page than the copying the load does on it.
double minor_faults() {
    rusage usage{};
    getrusage(RUSAGE_SELF, &usage);
    return static_cast<double>(usage.ru_minflt);
}

// The file to open: MEMTRAIL_BENCH_PICKLE, else the synthetic pickle, written once.
const std::filesystem::path& file() {
    static const bench::bench_file f(
        "MEMTRAIL_BENCH_PICKLE", "memtrail_bench_open.pickle",
        [](const std::filesystem::path& path) {
            bench::python_stack_trace_shape shape;
            if (const char* events = std::getenv("MEMTRAIL_BENCH_EVENTS")) {
                shape.entries = std::stoull(events);
            }
            bench::write_python_stack_pickle(path, shape);
        });
    return f.path();
}

void add_file_counters(benchmark::State& state, const viewer::document& doc) {
    const snapshot::snapshot& s = *doc.source;
    size_t entries = 0;
    for (const auto& t : s.traces) {
        entries += t.entries.size();
    }
    state.counters["entries"] = static_cast<double>(entries);
    state.counters["stacks"] = static_cast<double>(s.stacks().size());
    state.counters["frames"] = static_cast<double>(s.frames().size());
    state.counters["file_MB"] = static_cast<double>(std::filesystem::file_size(file())) / 1e6;
}

// The viewer's load: a load_job, from its start until the UI can draw the file's first picture
// (its preview: the device models' curves) and until the document is complete.
void open_document(benchmark::State& state) {
    const auto& path = file();
    for (auto _ : state) {
        const auto start = clock_type::now();
        const double cpu_start = process_cpu_seconds();
        const double faults_start = minor_faults();
        viewer::load_job job(path.string(), analysis::frame_visibility::user_frames);
        double first_picture = 0;
        while (!job.done()) {
            if (first_picture == 0 && job.preview() != nullptr) {
                first_picture = seconds_since(start);
            }
            std::this_thread::sleep_for(std::chrono::microseconds(200));
        }
        const double loaded = seconds_since(start);
        state.counters["loaded_cpu_s"] = process_cpu_seconds() - cpu_start;
        state.counters["loaded_faults"] = minor_faults() - faults_start;
        const std::shared_ptr<const viewer::document> doc = job.result();
        if (doc == nullptr) {
            state.SkipWithError(job.error().c_str());
            return;
        }
        state.SetIterationTime(loaded);
        state.counters["first_picture_s"] = first_picture;
        state.counters["loaded_s"] = loaded;
        add_file_counters(state, *doc);
    }
}
BENCHMARK(open_document)->UseManualTime()->Iterations(1)->Unit(benchmark::kMillisecond);

// The load's parts, one after another, each timed on its own.
void stages(benchmark::State& state) {
    const auto& path = file();
    for (auto _ : state) {
        // Each stage's wall time as NAME_s and its CPU time as NAME_cpu_s.
        auto timed = [&](const char* name, auto&& stage) {
            const auto start = clock_type::now();
            const double cpu_start = process_cpu_seconds();
            const double faults_start = minor_faults();
            auto result = stage();
            state.counters[std::string(name) + "_s"] = seconds_since(start);
            state.counters[std::string(name) + "_cpu_s"] = process_cpu_seconds() - cpu_start;
            state.counters[std::string(name) + "_faults"] = minor_faults() - faults_start;
            return result;
        };
        const auto start = clock_type::now();
        const snapshot::loaded_snapshot loaded =
            timed("read", [&] { return snapshot::load_snapshot(path); });
        const auto visible = timed("frame_filter", [&] {
            return analysis::with_frame_visibility(loaded.snapshot,
                                                   analysis::frame_visibility::user_frames);
        });
        const auto model =
            timed("model", [&] { return analysis::device_model::build(visible, 0); });
        benchmark::DoNotOptimize(
            timed("categories", [&] { return analysis::category_map::build(model); }));
        viewer::load_progress progress;
        benchmark::DoNotOptimize(
            timed("document", [&] { return viewer::make_document(visible, "bench", progress); }));
        state.SetIterationTime(seconds_since(start));
    }
}
BENCHMARK(stages)->UseManualTime()->Iterations(1)->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();

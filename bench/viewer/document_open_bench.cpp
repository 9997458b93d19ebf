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
// stages/ benchmarks run its parts one by one on the same file.

#include <benchmark/benchmark.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <string>
#include <system_error>

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

// The file to open: MEMTRAIL_BENCH_PICKLE, else the synthetic pickle, written once.
class bench_file {
  public:
    bench_file() {
        const char* given = std::getenv("MEMTRAIL_BENCH_PICKLE");
        if (given != nullptr && std::filesystem::exists(given)) {
            path_ = given;
            return;
        }
        bench::python_stack_trace_shape shape;
        if (const char* events = std::getenv("MEMTRAIL_BENCH_EVENTS")) {
            shape.entries = std::stoull(events);
        }
        owned_ = given == nullptr;
        path_ = owned_ ? std::filesystem::temp_directory_path() /
                             ("memtrail_bench_open_" + std::to_string(getpid()) + ".pickle")
                       : std::filesystem::path(given);
        bench::write_python_stack_pickle(path_, shape);
    }
    ~bench_file() {
        if (owned_) {
            std::error_code ignored;
            std::filesystem::remove(path_, ignored);
        }
    }
    const std::filesystem::path& path() const { return path_; }

  private:
    std::filesystem::path path_;
    bool owned_ = false;
};

const std::filesystem::path& file() {
    static const bench_file f;
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
// and until the document is complete.
void open_document(benchmark::State& state) {
    const auto& path = file();
    for (auto _ : state) {
        const auto start = clock_type::now();
        viewer::load_job job(path.string(), analysis::frame_visibility::user_frames);
        while (!job.done()) {
            std::this_thread::sleep_for(std::chrono::microseconds(200));
        }
        const double loaded = seconds_since(start);
        const std::shared_ptr<const viewer::document> doc = job.result();
        if (doc == nullptr) {
            state.SkipWithError(job.error().c_str());
            return;
        }
        state.SetIterationTime(loaded);
        state.counters["loaded_s"] = loaded;
        add_file_counters(state, *doc);
    }
}
BENCHMARK(open_document)->UseManualTime()->Iterations(1)->Unit(benchmark::kMillisecond);

// The load's parts, one after another, each timed on its own.
void stages(benchmark::State& state) {
    const auto& path = file();
    for (auto _ : state) {
        auto start = clock_type::now();
        const snapshot::loaded_snapshot loaded = snapshot::load_snapshot(path);
        state.counters["read_s"] = seconds_since(start);

        start = clock_type::now();
        const auto visible = analysis::with_frame_visibility(
            loaded.snapshot, analysis::frame_visibility::user_frames);
        state.counters["frame_filter_s"] = seconds_since(start);

        start = clock_type::now();
        const auto model = analysis::device_model::build(visible, 0);
        state.counters["model_s"] = seconds_since(start);

        start = clock_type::now();
        const auto categories = analysis::category_map::build(model);
        benchmark::DoNotOptimize(categories);
        state.counters["categories_s"] = seconds_since(start);

        start = clock_type::now();
        viewer::load_progress progress;
        const auto doc = viewer::make_document(visible, "bench", progress);
        state.counters["document_s"] = seconds_since(start);
        state.SetIterationTime(0);
    }
}
BENCHMARK(stages)->UseManualTime()->Iterations(1)->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();

// `memtrail report` on a 1M-entry snapshot made from a real PyTorch trace: the pictures the page
// draws, reduced in C++ (timeline columns, segment map, flame graph), and the whole command as a
// user runs it (load, the embedded commands' analyses, the page written), with the page's size.
//
//   build/bin/bench_report                                        # temporary 1M-entry snapshot
//   MEMTRAIL_BENCH_SNAPSHOT=/tmp/report_1m.memtrail build/bin/bench_report   # writes it, kept
//   python3 bench/cli/report_page_load.py build/bin/memtrail /tmp/report_1m.memtrail  # browser
//   MEMTRAIL_BENCH_ENTRIES=10000000 build/bin/bench_report --benchmark_repetitions=5
//       --benchmark_filter=report_command   # the command alone, 10M entries: medians of 5 runs
//
// The snapshot repeats MEMTRAIL_BENCH_TRACE (default: tests/data/traces' generate_dynamic.pickle,
// a Hugging Face generate() of 154k entries) until it holds MEMTRAIL_BENCH_ENTRIES entries (1M by
// default): each repetition's addresses moved into an address range of its own and its times
// after the previous one's, so every repetition replays as the original did.

#include <benchmark/benchmark.h>
#include <sys/resource.h>

#include <cstdlib>
#include <filesystem>
#include <sstream>
#include <string>

#include "bench_support.hpp"
#include "detail/report_pictures.hpp"
#include "memtrail/analysis/categories.hpp"
#include "memtrail/analysis/device_model.hpp"
#include "memtrail/analysis/flame.hpp"
#include "memtrail/snapshot/load.hpp"
#include "memtrail/snapshot/msgpack_format.hpp"

namespace {

using namespace memtrail;

constexpr uint64_t repetition_address_stride = uint64_t{1} << 40;

bool has_address(snapshot::action kind) {
    return kind != snapshot::action::oom && kind != snapshot::action::snapshot &&
           kind != snapshot::action::annotation_start && kind != snapshot::action::annotation_end &&
           kind != snapshot::action::annotation_marker;
}

snapshot::snapshot repeated_trace(const std::string& source_path, size_t wanted_entries) {
    const snapshot::snapshot source = *snapshot::load_snapshot(source_path).snapshot;
    snapshot::snapshot out = source;
    const snapshot::device_trace& original = source.traces.at(0);
    if (original.entries.empty()) {
        throw std::runtime_error(source_path + " has no trace entries to repeat");
    }
    snapshot::device_trace& trace = out.traces.at(0);
    const int64_t span =
        original.entries.back().time_ns - original.entries.front().time_ns + 1'000'000;
    for (uint64_t k = 1; trace.entries.size() < wanted_entries; ++k) {
        for (snapshot::trace_entry e : original.entries) {
            if (has_address(e.kind)) {
                e.address += k * repetition_address_stride;
            }
            e.time_ns += static_cast<int64_t>(k) * span;
            trace.entries.push_back(e);
        }
        for (snapshot::segment s : source.segments) {
            s.address += k * repetition_address_stride;
            for (snapshot::block& b : s.blocks) {
                b.address += k * repetition_address_stride;
            }
            out.segments.push_back(std::move(s));
        }
    }
    return out;
}

const std::filesystem::path& snapshot_file() {
    static const bench::bench_file file(
        "MEMTRAIL_BENCH_SNAPSHOT", "memtrail_bench_report.memtrail",
        [](const std::filesystem::path& path) {
            const char* trace = std::getenv("MEMTRAIL_BENCH_TRACE");
            const char* entries = std::getenv("MEMTRAIL_BENCH_ENTRIES");
            snapshot::write_snapshot(
                repeated_trace(trace != nullptr ? trace : MEMTRAIL_DEFAULT_TRACE,
                               entries != nullptr ? std::stoull(entries) : 1'000'000),
                path);
        });
    return file.path();
}

struct opened_model {
    analysis::device_model model;
    analysis::category_map categories;
};

const opened_model& opened() {
    static const opened_model m = [] {
        auto model =
            analysis::device_model::build(snapshot::load_snapshot(snapshot_file()).snapshot, 0);
        auto categories = analysis::category_map::build(model);
        return opened_model{std::move(model), std::move(categories)};
    }();
    return m;
}

void report_timeline(benchmark::State& state) {
    const opened_model& m = opened();
    const size_t peak = m.model.peak_position(analysis::series::allocated);
    size_t bytes = 0;
    for (auto _ : state) {
        std::ostringstream out;
        cli::json_writer json(out);
        cli::write_timeline(json, m.model, m.categories, peak);
        bytes = out.str().size();
    }
    state.counters["entries"] = static_cast<double>(m.model.event_count());
    state.counters["embedded_KB"] = static_cast<double>(bytes) / 1024.0;
}
BENCHMARK(report_timeline)->Unit(benchmark::kMillisecond);

void report_segment_map_and_flame(benchmark::State& state) {
    const opened_model& m = opened();
    const size_t peak = m.model.peak_position(analysis::series::allocated);
    size_t bytes = 0;
    for (auto _ : state) {
        std::ostringstream out;
        cli::json_writer json(out);
        json.begin_array();
        cli::write_segment_map(json, m.model.state_after(peak));
        cli::write_flame(json,
                         analysis::flame_at(m.model, peak, analysis::live_measure::allocated));
        json.end_array();
        bytes = out.str().size();
    }
    state.counters["embedded_KB"] = static_cast<double>(bytes) / 1024.0;
}
BENCHMARK(report_segment_map_and_flame)->Unit(benchmark::kMillisecond);

// CPU seconds (user and system) of the children that have ended.
double children_cpu_seconds() {
    rusage usage{};
    getrusage(RUSAGE_CHILDREN, &usage);
    const auto seconds = [](const timeval& t) { return t.tv_sec + t.tv_usec / 1e6; };
    return seconds(usage.ru_utime) + seconds(usage.ru_stime);
}

// The command as a user runs it, in a process of its own (MEMTRAIL_BENCH_MEMTRAIL names another
// binary, to set two builds side by side): its CPU time and the page's size as counters; on a
// shared machine the CPU time is the number to read.
void report_command(benchmark::State& state) {
    const std::filesystem::path page =
        std::filesystem::temp_directory_path() / "memtrail_bench_report.html";
    const char* binary = std::getenv("MEMTRAIL_BENCH_MEMTRAIL");
    const std::string command = std::string(binary != nullptr ? binary : MEMTRAIL_BINARY) +
                                " report '" + snapshot_file().string() + "' -o '" + page.string() +
                                "'";
    const double cpu_before = children_cpu_seconds();
    for (auto _ : state) {
        if (std::system(command.c_str()) != 0) {
            state.SkipWithError(("failed: " + command).c_str());
            return;
        }
    }
    state.counters["command_cpu_s"] =
        (children_cpu_seconds() - cpu_before) / static_cast<double>(state.iterations());
    state.counters["page_MB"] =
        static_cast<double>(std::filesystem::file_size(page)) / (1024.0 * 1024.0);
    std::filesystem::remove(page);
}
BENCHMARK(report_command)->Unit(benchmark::kMillisecond)->Iterations(1);

}  // namespace

BENCHMARK_MAIN();

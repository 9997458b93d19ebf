// `memtrail replay` on a 1M-entry PyTorch pickle: reading plus replay, on one core.
// Target: at most 2 s. And a replay of a run of 1M segment frees (empty_cache of a million
// segments), which planning made quadratic once: it must stay linear.
// Run: build/bin/bench_replay --benchmark_repetitions=3

#include <benchmark/benchmark.h>

#include <filesystem>

#include "memtrail/replay/replay.hpp"
#include "memtrail/replay/synthetic_trace.hpp"
#include "memtrail/snapshot/torch_pickle.hpp"

namespace {

using namespace memtrail;

const std::filesystem::path& million_entry_pickle() {
    static const std::filesystem::path path = [] {
        replay::synthetic_options options;
        options.operations = 670000;  // about 1M trace entries with the frees and segments
        options.live_slots = 1000;
        options.device_memory = 80ull << 30;
        const auto file = std::filesystem::temp_directory_path() / "memtrail_bench_1m.pickle";
        snapshot::write_torch_pickle(replay::make_synthetic_history(options), file);
        return file;
    }();
    return path;
}

void read_and_replay(benchmark::State& state) {
    const auto& path = million_entry_pickle();
    size_t entries = 0;
    for (auto _ : state) {
        const snapshot::snapshot trace = snapshot::read_torch_pickle(path);
        entries = trace.find_trace(0)->entries.size();
        replay::replay_options options;
        options.device_memory = 80ull << 30;
        benchmark::DoNotOptimize(replay::replay_trace(trace, options));
    }
    state.counters["entries"] = static_cast<double>(entries);
    state.SetItemsProcessed(static_cast<int64_t>(state.iterations() * entries));
}
BENCHMARK(read_and_replay)->Unit(benchmark::kMillisecond)->Iterations(1)->UseRealTime();

// A million segments given back in one run (none allocated in the trace, as when recording began
// after they were made), then the allocation that follows.
snapshot::snapshot million_frees() {
    constexpr uint64_t frees = 1000000;
    snapshot::snapshot trace;
    auto& entries = trace.trace_for(0).entries;
    entries.reserve(frees + 1);
    for (uint64_t i = 0; i < frees; ++i) {
        snapshot::trace_entry& e = entries.emplace_back();
        e.kind = snapshot::action::segment_free;
        e.address = 0x7000000000ull + (i << 21);
        e.size = 2ull << 20;
    }
    snapshot::trace_entry& request = entries.emplace_back();
    request.kind = snapshot::action::alloc;
    request.address = 0x9000000000ull;
    request.size = 4096;
    return trace;
}

void replay_a_million_frees(benchmark::State& state) {
    const snapshot::snapshot trace = million_frees();
    for (auto _ : state) {
        replay::replay_options options;
        options.device_memory = 80ull << 30;
        benchmark::DoNotOptimize(replay::replay_trace(trace, options));
    }
    state.SetItemsProcessed(
        static_cast<int64_t>(state.iterations() * trace.find_trace(0)->entries.size()));
}
BENCHMARK(replay_a_million_frees)->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace

BENCHMARK_MAIN();

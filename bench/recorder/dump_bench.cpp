// Dumping a large history: 1,000,002 trace entries whose allocations come from 5,000 distinct
// native stacks, symbolized (functions, files, lines) and written uncompressed.

#include <benchmark/benchmark.h>

#include <filesystem>

#include "memtrail/core/simulated_device.hpp"
#include "memtrail/recorder/recorder.hpp"

namespace {

using namespace memtrail;

constexpr int distinct_stacks = 5000;
constexpr int choice_levels = 13;           // 2^13 paths >= 5000
constexpr int pairs_per_history = 333'334;  // 3 entries each: alloc, free_requested, free_completed

[[gnu::noipa]] void take_right(int bits, int level, recorder::recorder& history,
                               device_address& out);

// Each bit of `bits` picks left or right at one level: every value is its own call stack.
// noipa: the two functions are identical, and identical code folding would merge them.
[[gnu::noipa]] void take_left(int bits, int level, recorder::recorder& history,
                              device_address& out) {
    if (level == choice_levels) {
        out = history.allocate(4096 + static_cast<uint64_t>(bits % 64) * 512, 0);
        return;
    }
    if ((bits >> level) & 1) {
        take_right(bits, level + 1, history, out);
    } else {
        take_left(bits, level + 1, history, out);
    }
    benchmark::ClobberMemory();
}

[[gnu::noipa]] void take_right(int bits, int level, recorder::recorder& history,
                               device_address& out) {
    if (level == choice_levels) {
        out = history.allocate(4096 + static_cast<uint64_t>(bits % 64) * 512, 0);
        return;
    }
    if ((bits >> level) & 1) {
        take_right(bits, level + 1, history, out);
    } else {
        take_left(bits, level + 1, history, out);
    }
    benchmark::ClobberMemory();
}

void dump_million_events(benchmark::State& state) {
    simulated_device gpu;
    caching_allocator allocator({&gpu});
    recorder::recorder history(allocator);
    recorder::history_options options;
    options.max_entries = 2'000'000;
    options.context = recorder::context_mode::alloc;  // stacks on the 333,334 allocations
    history.record_memory_history(options);
    for (int i = 0; i < pairs_per_history; ++i) {
        device_address p = 0;
        take_left(i % distinct_stacks, 0, history, p);
        history.free(p);
    }
    // Switched off so that every dump writes the same history (a snapshot adds one entry).
    options.enabled = recorder::record_mode::off;
    history.record_memory_history(options);

    const auto path = std::filesystem::temp_directory_path() / "memtrail_dump_bench.memtrail";
    uintmax_t bytes = 0;
    size_t entries = 0;
    for (auto _ : state) {
        history.dump_snapshot(path);
        state.PauseTiming();
        bytes = std::filesystem::file_size(path);
        state.ResumeTiming();
    }
    entries = history.take_snapshot().find_trace(0)->entries.size();
    std::filesystem::remove(path);
    state.counters["entries"] = static_cast<double>(entries);
    state.counters["unique_stacks"] = static_cast<double>(history.stacks().size());
    state.counters["bytes_per_entry"] = static_cast<double>(bytes) / static_cast<double>(entries);
}

BENCHMARK(dump_million_events)->Unit(benchmark::kMillisecond)->Iterations(3);

}  // namespace

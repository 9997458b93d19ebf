// How long a snapshot holds the threads that record: 4 threads allocate and free through the
// recorder, timing every alloc+free pair, while the benchmark's thread takes snapshots of a full
// 1,000,000-entry history (arg 1) or sleeps 50 ms (arg 0, the baseline). The counters are
// the pairs' median, 99.9th percentile and largest time, in microseconds: what the snapshot adds
// to the largest is how long its cut held a recording thread.

#include <benchmark/benchmark.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

#include "memtrail/core/simulated_device.hpp"
#include "memtrail/recorder/recorder.hpp"

namespace {

using namespace memtrail;
using clock_type = std::chrono::steady_clock;

constexpr int recording_threads = 4;
constexpr size_t history_entries = 1'000'000;

double microseconds(clock_type::duration d) {
    return std::chrono::duration<double, std::micro>(d).count();
}

void record_while_snapshots_are_taken(benchmark::State& state) {
    const bool taking = state.range(0) != 0;
    simulated_device gpu;
    caching_allocator allocator({&gpu});
    recorder::recorder history(allocator);
    recorder::history_options options;
    options.max_entries = history_entries;
    options.context = recorder::context_mode::none;  // cheap calls: the waits stand out
    history.record_memory_history(options);
    for (size_t i = 0; i < history_entries / 3; ++i) {
        history.free(history.allocate(4096, 0));
    }

    std::atomic<bool> stop{false};
    std::vector<std::vector<clock_type::duration>> times(recording_threads);
    std::vector<std::thread> threads;
    for (int t = 0; t < recording_threads; ++t) {
        times[t].reserve(4'000'000);  // times are kept until the end
        threads.emplace_back([&history, &stop, &own = times[t]] {
            while (!stop.load(std::memory_order_relaxed) && own.size() < own.capacity()) {
                const auto start = clock_type::now();
                history.free(history.allocate(4096, 0));
                own.push_back(clock_type::now() - start);
            }
        });
    }
    for (auto _ : state) {
        if (taking) {
            benchmark::DoNotOptimize(history.take_snapshot());
        } else {
            std::this_thread::sleep_for(std::chrono::milliseconds(50));
        }
    }
    stop.store(true);
    for (auto& thread : threads) {
        thread.join();
    }

    std::vector<clock_type::duration> all;
    for (const auto& own : times) {
        all.insert(all.end(), own.begin(), own.end());
    }
    std::sort(all.begin(), all.end());
    state.counters["pairs"] = static_cast<double>(all.size());
    state.counters["median_us"] = microseconds(all[all.size() / 2]);
    state.counters["p999_us"] = microseconds(all[all.size() * 999 / 1000]);
    state.counters["max_us"] = microseconds(all.back());
}

BENCHMARK(record_while_snapshots_are_taken)
    ->ArgName("snapshots")
    ->Arg(0)
    ->Arg(1)
    ->Unit(benchmark::kMillisecond)
    ->Iterations(20)
    ->UseRealTime();

}  // namespace

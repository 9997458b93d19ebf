// What recording adds to an alloc+free pair served from the cache: off, trace without stacks,
// trace with native stacks (libunwind, eh_frame and frame pointers), from a shallow and a deep call
// stack, and the unwinders that read .eh_frame from stacks built without frame pointers; and the
// production mode (docs/production.md): eh_frame stacks of allocations only, frees without.

#include <benchmark/benchmark.h>

#include <chrono>
#include <vector>

#include "full_trace_ring.hpp"
#include "memtrail/core/simulated_device.hpp"
#include "memtrail/recorder/recorder.hpp"

namespace {

using namespace memtrail;

enum class setting {
    off,
    no_stacks,
    libunwind_stacks,
    frame_pointer_stacks,
    eh_frame_stacks,
    production,  // eh_frame stacks of allocations, none of frees (context alloc)
};

recorder::history_options options_for(setting s) {
    recorder::history_options options;
    options.enabled = s == setting::off ? recorder::record_mode::off : recorder::record_mode::all;
    options.context = s == setting::off || s == setting::no_stacks ? recorder::context_mode::none
                      : s == setting::production                   ? recorder::context_mode::alloc
                                                                   : recorder::context_mode::all;
    options.stack_unwinder = s == setting::frame_pointer_stacks ? recorder::unwinder::frame_pointer
                             : s == setting::eh_frame_stacks || s == setting::production
                                 ? recorder::unwinder::eh_frame
                                 : recorder::unwinder::libunwind;
    return options;
}

[[gnu::noinline]] void pairs(benchmark::State& state, recorder::recorder& history) {
    for (auto _ : state) {
        const device_address p = history.allocate(4096, 0);
        benchmark::DoNotOptimize(p);
        history.free(p);
    }
}

// Each allocation and free from one of two places in turn, so that consecutive captures differ
// in their innermost frames as a program's do (the eh_frame walk reuses only the outer ones).
[[gnu::noinline, gnu::optimize("omit-frame-pointer")]] device_address allocate_here(
    recorder::recorder& history) {
    const device_address p = history.allocate(4096, 0);
    benchmark::DoNotOptimize(p);
    return p;
}
[[gnu::noinline, gnu::optimize("omit-frame-pointer")]] device_address allocate_there(
    recorder::recorder& history) {
    const device_address p = history.allocate(4096, 0);
    benchmark::ClobberMemory();
    return p;
}

[[gnu::noinline]] void pairs_from_two_places(benchmark::State& state, recorder::recorder& history) {
    bool here = false;
    for (auto _ : state) {
        here = !here;
        history.free(here ? allocate_here(history) : allocate_there(history));
    }
}

// A real program's work between two allocations takes the caches from the recorder: PyTorch runs
// 20 us of interpreter and dispatcher code between events in training. Between pairs this writes
// `sweep_bytes` of other memory, and only the pair is timed.
[[gnu::noinline]] void cold_pairs_from_two_places(benchmark::State& state,
                                                  recorder::recorder& history, size_t sweep_bytes) {
    std::vector<uint64_t> other(sweep_bytes / sizeof(uint64_t), 1);
    bool here = false;
    for (auto _ : state) {
        for (size_t i = 0; i < other.size(); i += 8) {
            other[i] += i;
        }
        benchmark::ClobberMemory();
        const auto start = std::chrono::steady_clock::now();
        here = !here;
        history.free(here ? allocate_here(history) : allocate_there(history));
        state.SetIterationTime(
            std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
    }
}

// Real programs allocate from deep stacks (PyTorch: 30 to 60 native frames).
[[gnu::noinline]] void at_depth(int depth, benchmark::State& state, recorder::recorder& history) {
    if (depth == 0) {
        pairs(state, history);
        return;
    }
    at_depth(depth - 1, state, history);
    benchmark::ClobberMemory();
}

// The same recursion without frame pointers, as most libraries are built.
[[gnu::noinline, gnu::optimize("omit-frame-pointer")]] void at_depth_without_frame_pointers(
    int depth, benchmark::State& state, recorder::recorder& history, bool two_places,
    size_t sweep_bytes = 0) {
    if (depth == 0) {
        if (sweep_bytes > 0) {
            cold_pairs_from_two_places(state, history, sweep_bytes);
        } else if (two_places) {
            pairs_from_two_places(state, history);
        } else {
            pairs(state, history);
        }
        return;
    }
    at_depth_without_frame_pointers(depth - 1, state, history, two_places, sweep_bytes);
    benchmark::ClobberMemory();
}

const char* label_of(setting s) {
    switch (s) {
        case setting::off:
            return "off";
        case setting::no_stacks:
            return "trace, no stacks";
        case setting::libunwind_stacks:
            return "trace + libunwind stacks";
        case setting::frame_pointer_stacks:
            return "trace + frame-pointer stacks";
        case setting::eh_frame_stacks:
            return "trace + eh_frame stacks";
        case setting::production:
            return "production: eh_frame stacks of allocations";
    }
    return "";
}

// One recorder for the process, as librecorder has, its trace ring full before anything is
// timed (full_trace_ring.hpp).
recorder::recorder& recorder_with_full_ring() {
    static simulated_device gpu;
    static caching_allocator allocator({&gpu});
    static recorder::recorder history(allocator);
    static const bool filled = (bench::fill_trace_ring(history, 4096), true);
    benchmark::DoNotOptimize(filled);
    return history;
}

template <bool frame_pointers, bool two_places = false>
void alloc_free_pair(benchmark::State& state) {
    const auto s = static_cast<setting>(state.range(0));
    const auto depth = static_cast<int>(state.range(1));
    recorder::recorder& history = recorder_with_full_ring();
    history.record_memory_history(options_for(s));
    if (frame_pointers) {
        at_depth(depth, state, history);
    } else {
        at_depth_without_frame_pointers(depth, state, history, two_places);
    }
    state.SetLabel(label_of(s));
}

// Pairs from two places with caches taken by other work between them (cold_pairs_from_two_places).
void alloc_free_pair_cold(benchmark::State& state) {
    const auto s = static_cast<setting>(state.range(0));
    recorder::recorder& history = recorder_with_full_ring();
    history.record_memory_history(options_for(s));
    at_depth_without_frame_pointers(static_cast<int>(state.range(1)), state, history, true,
                                    static_cast<size_t>(state.range(2)) << 10);
    state.SetLabel(label_of(s));
}

BENCHMARK(alloc_free_pair<true>)
    ->ArgNames({"setting", "extra_frames"})
    ->ArgsProduct({{0, 1, 2, 3, 4}, {0, 40}});
BENCHMARK(alloc_free_pair<false>)
    ->Name("alloc_free_pair_no_frame_pointers")
    ->ArgNames({"setting", "extra_frames"})
    ->ArgsProduct({{0, 2, 4, 5}, {0, 16, 32, 64}});
BENCHMARK(alloc_free_pair<false, true>)
    ->Name("alloc_free_pair_no_frame_pointers_two_places")
    ->ArgNames({"setting", "extra_frames"})
    ->ArgsProduct({{0, 2, 4, 5}, {32}});
BENCHMARK(alloc_free_pair_cold)
    ->ArgNames({"setting", "extra_frames", "sweep_kib"})
    ->ArgsProduct({{0, 1, 4, 5}, {32}, {4096}})
    ->UseManualTime()
    // A minimum time would count only the timed pairs: on a slow host the sweeps between them
    // then ran for minutes.
    ->Iterations(20000);

}  // namespace

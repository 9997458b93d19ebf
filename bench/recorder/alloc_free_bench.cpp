// What recording adds to an alloc+free pair served from the cache: off, trace without stacks,
// trace with native stacks (libunwind and frame pointers), from a shallow and a deep call stack.

#include <benchmark/benchmark.h>

#include "memtrail/core/simulated_device.hpp"
#include "memtrail/recorder/recorder.hpp"

namespace {

using namespace memtrail;

enum class setting { off, no_stacks, libunwind_stacks, frame_pointer_stacks };

recorder::history_options options_for(setting s) {
    recorder::history_options options;
    options.enabled = s == setting::off ? recorder::record_mode::off : recorder::record_mode::all;
    options.context = s == setting::off || s == setting::no_stacks ? recorder::context_mode::none
                                                                   : recorder::context_mode::all;
    options.stack_unwinder = s == setting::frame_pointer_stacks ? recorder::unwinder::frame_pointer
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

// Real programs allocate from deep stacks (PyTorch: 30 to 60 native frames).
[[gnu::noinline]] void at_depth(int depth, benchmark::State& state, recorder::recorder& history) {
    if (depth == 0) {
        pairs(state, history);
        return;
    }
    at_depth(depth - 1, state, history);
    benchmark::ClobberMemory();
}

void alloc_free_pair(benchmark::State& state) {
    const auto s = static_cast<setting>(state.range(0));
    const auto depth = static_cast<int>(state.range(1));
    simulated_device gpu;
    caching_allocator allocator({&gpu});
    recorder::recorder history(allocator);
    history.record_memory_history(options_for(s));
    at_depth(depth, state, history);
    state.SetLabel(s == setting::off                ? "off"
                   : s == setting::no_stacks        ? "trace, no stacks"
                   : s == setting::libunwind_stacks ? "trace + libunwind stacks"
                                                    : "trace + frame-pointer stacks");
}

BENCHMARK(alloc_free_pair)
    ->ArgNames({"setting", "extra_frames"})
    ->ArgsProduct({{0, 1, 2, 3}, {0, 40}});

}  // namespace

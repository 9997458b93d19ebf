// Allocator hot path: an alloc+free pair at fixed sizes and a random mix (1000 live slots,
// log-uniform sizes from 512 B to 64 MiB), on 1-8 threads, on the simulated device and, where
// a GPU is visible, on CUDA. Run:  build/bin/bench_allocator --benchmark_repetitions=5
//   --benchmark_report_aggregates_only=true

#include <benchmark/benchmark.h>

#include <memory>

#include "memtrail/core/caching_allocator.hpp"
#include "memtrail/core/simulated_device.hpp"
#include "random_mix.hpp"
#ifdef MEMTRAIL_HAVE_CUDA
#include "memtrail/core/cuda_device.hpp"
#endif

namespace {

using namespace memtrail;

// One allocator per benchmark family and device kind, shared by its threads.
struct shared_allocator {
    std::unique_ptr<device> dev;
    std::unique_ptr<device_allocator> allocator;
};

shared_allocator make_shared_allocator(bool cuda) {
    shared_allocator s;
#ifdef MEMTRAIL_HAVE_CUDA
    if (cuda) {
        s.dev = std::make_unique<cuda_device>(0);
    }
#endif
    if (!cuda) {
        s.dev = std::make_unique<simulated_device>(simulated_device_options{});
    }
    s.allocator = std::make_unique<device_allocator>(*s.dev);
    return s;
}

// Made by the first thread of the first benchmark that asks (a function-local static is
// initialised once even when a benchmark's threads all start at the same time).
shared_allocator& allocator_for(bool cuda) {
    if (cuda) {
        static shared_allocator gpu = make_shared_allocator(true);
        return gpu;
    }
    static shared_allocator sim = make_shared_allocator(false);
    return sim;
}

void pair(benchmark::State& state, bool cuda, uint64_t size) {
    device_allocator& a = *allocator_for(cuda).allocator;
    // Per-thread streams keep threads on their own free lists, as PyTorch's per-stream pools do.
    const stream_handle stream = cuda ? 0 : static_cast<stream_handle>(state.thread_index());
    a.free(a.allocate(size, stream));  // warm: the segment exists
    for (auto _ : state) {
        const device_address p = a.allocate(size, stream);
        benchmark::DoNotOptimize(p);
        a.free(p);
    }
    state.SetItemsProcessed(state.iterations());
}

void random_mix_steps(benchmark::State& state, bool cuda) {
    device_allocator& a = *allocator_for(cuda).allocator;
    const stream_handle stream = cuda ? 0 : static_cast<stream_handle>(state.thread_index());
    bench::random_mix mix(a, stream, static_cast<uint64_t>(state.thread_index()) + 7);
    for (auto _ : state) {
        mix.step();
    }
    state.SetItemsProcessed(state.iterations());
}

void register_all(const char* kind, bool cuda) {
    for (uint64_t size : {512ull, 1ull << 20, 20ull << 20}) {
        const std::string name = std::string("pair/") + kind + "/" + std::to_string(size);
        benchmark::RegisterBenchmark(name.c_str(),
                                     [=](benchmark::State& s) { pair(s, cuda, size); })
            ->ThreadRange(1, 8)
            ->UseRealTime();
    }
    benchmark::RegisterBenchmark((std::string("random_mix/") + kind).c_str(),
                                 [=](benchmark::State& s) { random_mix_steps(s, cuda); })
        ->ThreadRange(1, 8)
        ->UseRealTime();
}

}  // namespace

int main(int argc, char** argv) {
    register_all("sim", false);
#ifdef MEMTRAIL_HAVE_CUDA
    if (cuda_device::count() > 0) {
        register_all("cuda", true);
    }
#endif
    benchmark::Initialize(&argc, argv);
    benchmark::RunSpecifiedBenchmarks();
    benchmark::Shutdown();
    return 0;
}

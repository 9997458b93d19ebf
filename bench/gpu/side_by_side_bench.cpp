// memtrail's allocator (and the same with its device lock never biased) beside PyTorch's caching
// allocator (through libtorch), cudaMallocAsync
// and cudaMalloc, in one process on one GPU: the alloc+free pair at 512 B, 1 MiB and 20 MiB, the
// random mix (1000 live slots, log-uniform sizes from 512 B to 64 MiB), each on 1 to 8 threads,
// and what recording adds to a pair, memtrail's recorder against PyTorch's
// _record_memory_history. PyTorch's allocator comes from libmemtrail_torch_allocator.so (built
// against libtorch, see CMakeLists.txt), looked for in $MEMTRAIL_TORCH_ALLOCATOR, then in lib/
// beside bin/; without it the PyTorch rows are left out.
//   build/bin/bench_side_by_side --benchmark_repetitions=5 --benchmark_report_aggregates_only=true

#include <benchmark/benchmark.h>
#include <cuda_runtime_api.h>
#include <dlfcn.h>
#include <execinfo.h>
#include <signal.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "full_trace_ring.hpp"
#include "memtrail/core/caching_allocator.hpp"
#include "memtrail/core/cuda_device.hpp"
#include "memtrail/recorder/recorder.hpp"
#include "torch_allocator.hpp"

namespace {

using namespace memtrail;

void check(cudaError_t status, const char* what) {
    if (status != cudaSuccess) {
        std::fprintf(stderr, "%s: %s\n", what, cudaGetErrorString(status));
        std::exit(1);
    }
}

// What every allocator under test offers: allocate, free, and give its cache back (between
// benchmarks, so that one allocator's cache never starves the next of device memory).
class backend {
  public:
    virtual ~backend() = default;
    virtual void* allocate(size_t size) = 0;
    virtual void release(void* pointer) = 0;
    virtual void empty_cache() {}
};

// The allocator alone, as bench/core measures it.
class memtrail_allocator_backend final : public backend {
  public:
    explicit memtrail_allocator_backend(allocator_config config = {})
        : allocator_(gpu_, std::move(config)) {}
    void* allocate(size_t size) override {
        return reinterpret_cast<void*>(allocator_.allocate(size, 0));
    }
    void release(void* pointer) override {
        allocator_.free(reinterpret_cast<device_address>(pointer));
    }
    void empty_cache() override { allocator_.empty_cache(); }

  private:
    cuda_device gpu_{0};
    device_allocator allocator_;
};

// The allocator behind the recorder, as librecorder serves programs and PyTorch.
class memtrail_backend final : public backend {
  public:
    void* allocate(size_t size) override { return to_pointer(history_.allocate(size, 0)); }
    void release(void* pointer) override {
        history_.free(reinterpret_cast<device_address>(pointer));
    }
    void empty_cache() override { allocator_.empty_cache(); }

    // Recording through the recorder's front door, as librecorder and PyTorch's plug-in use it.
    void record(const recorder::history_options& options) {
        history_.record_memory_history(options);
    }
    void fill_trace_ring() { bench::fill_trace_ring(history_, 512); }

  private:
    static void* to_pointer(device_address address) { return reinterpret_cast<void*>(address); }
    cuda_device gpu_{0};
    caching_allocator allocator_{{&gpu_}};
    recorder::recorder history_{allocator_};
};

// libmemtrail_torch_allocator.so's functions.
struct torch_functions {
    decltype(&memtrail_torch_allocate) allocate = nullptr;
    decltype(&memtrail_torch_free) free = nullptr;
    decltype(&memtrail_torch_empty_cache) empty_cache = nullptr;
    decltype(&memtrail_torch_record_history) record_history = nullptr;
};

std::string torch_library_path() {
    if (const char* path = std::getenv("MEMTRAIL_TORCH_ALLOCATOR")) {
        return path;
    }
    std::error_code error;
    const auto executable = std::filesystem::read_symlink("/proc/self/exe", error);
    return (executable.parent_path().parent_path() / "lib" / "libmemtrail_torch_allocator.so")
        .string();
}

// nullptr when the library is not there (built without libtorch).
const torch_functions* load_torch() {
    static const torch_functions* const loaded = []() -> const torch_functions* {
        const std::string path = torch_library_path();
        void* library = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
        if (library == nullptr) {
            std::fprintf(stderr, "bench_side_by_side: no PyTorch rows (%s)\n", dlerror());
            return nullptr;
        }
        static torch_functions f;
        f.allocate =
            reinterpret_cast<decltype(f.allocate)>(dlsym(library, "memtrail_torch_allocate"));
        f.free = reinterpret_cast<decltype(f.free)>(dlsym(library, "memtrail_torch_free"));
        f.empty_cache =
            reinterpret_cast<decltype(f.empty_cache)>(dlsym(library, "memtrail_torch_empty_cache"));
        f.record_history = reinterpret_cast<decltype(f.record_history)>(
            dlsym(library, "memtrail_torch_record_history"));
        if (!f.allocate || !f.free || !f.empty_cache || !f.record_history) {
            std::fprintf(stderr, "bench_side_by_side: %s lacks a memtrail_torch_ function\n",
                         path.c_str());
            return nullptr;
        }
        return &f;
    }();
    return loaded;
}

class torch_backend final : public backend {
  public:
    void* allocate(size_t size) override { return torch_.allocate(size); }
    void release(void* pointer) override { torch_.free(pointer); }
    void empty_cache() override { torch_.empty_cache(); }

  private:
    const torch_functions& torch_ = *load_torch();
};

// Stream-ordered allocation from the device's default pool, kept from shrinking (the pool's
// release threshold at its maximum), on a stream per thread.
class cuda_malloc_async_backend final : public backend {
  public:
    cuda_malloc_async_backend() {
        check(cudaDeviceGetDefaultMemPool(&pool_, 0), "cudaDeviceGetDefaultMemPool");
        uint64_t threshold = UINT64_MAX;
        check(cudaMemPoolSetAttribute(pool_, cudaMemPoolAttrReleaseThreshold, &threshold),
              "cudaMemPoolSetAttribute");
    }
    void* allocate(size_t size) override {
        void* pointer = nullptr;
        check(cudaMallocAsync(&pointer, size, stream()), "cudaMallocAsync");
        return pointer;
    }
    void release(void* pointer) override {
        check(cudaFreeAsync(pointer, stream()), "cudaFreeAsync");
    }
    void empty_cache() override {
        check(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
        check(cudaMemPoolTrimTo(pool_, 0), "cudaMemPoolTrimTo");
    }

  private:
    static cudaStream_t stream() {
        thread_local const cudaStream_t own = [] {
            cudaStream_t s = nullptr;
            check(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), "cudaStreamCreate");
            return s;
        }();
        return own;
    }
    cudaMemPool_t pool_ = nullptr;
};

class cuda_malloc_backend final : public backend {
  public:
    void* allocate(size_t size) override {
        void* pointer = nullptr;
        check(cudaMalloc(&pointer, size), "cudaMalloc");
        return pointer;
    }
    void release(void* pointer) override { check(cudaFree(pointer), "cudaFree"); }
};

// Its trace ring is full before anything is timed (full_trace_ring.hpp).
memtrail_backend& memtrail_behind_recorder() {
    static memtrail_backend b;
    static const bool filled = (b.fill_trace_ring(), true);
    benchmark::DoNotOptimize(filled);
    return b;
}
torch_backend& torch_allocator() {
    static torch_backend b;
    return b;
}
backend& backend_named(const std::string& name) {
    static cuda_malloc_async_backend async;
    static cuda_malloc_backend plain;
    static memtrail_allocator_backend allocator_alone;
    if (name == "memtrail") {
        return allocator_alone;
    }
    if (name == "memtrail_unbiased") {
        // What the lock's bias gives, measured in the same process (docs/configuration.md).
        static memtrail_allocator_backend unbiased{[] {
            allocator_config config;
            config.device_lock.biased = false;  // MEMTRAIL_DEVICE_LOCK_BIAS=off
            return config;
        }()};
        return unbiased;
    }
    if (name == "memtrail_recorder") {
        return memtrail_behind_recorder();
    }
    if (name == "torch") {
        return torch_allocator();
    }
    return name == "cudaMallocAsync" ? static_cast<backend&>(async) : plain;
}

void pair(benchmark::State& state, backend& allocator, size_t size) {
    allocator.release(allocator.allocate(size));  // warm: the cache holds a block
    for (auto _ : state) {
        void* p = allocator.allocate(size);
        benchmark::DoNotOptimize(p);
        allocator.release(p);
    }
    state.SetItemsProcessed(state.iterations());
}

void random_mix(benchmark::State& state, backend& allocator) {
    std::mt19937_64 rng(static_cast<uint64_t>(state.thread_index()) + 7);
    std::uniform_real_distribution<double> exponent(9.0, 26.0);  // 512 B .. 64 MiB
    constexpr size_t slots = 1000;
    std::vector<size_t> sizes(1 << 16);
    for (auto& s : sizes) {
        s = static_cast<size_t>(std::exp2(exponent(rng)));
    }
    std::vector<void*> live(slots);
    for (size_t i = 0; i < slots; ++i) {
        live[i] = allocator.allocate(sizes[i]);
    }
    size_t k = 0;
    for (auto _ : state) {
        // One step: free a random slot and allocate a new random size into it.
        const size_t slot = rng() % slots;
        allocator.release(live[slot]);
        live[slot] = allocator.allocate(sizes[k++ & (sizes.size() - 1)]);
    }
    for (void* p : live) {
        allocator.release(p);
    }
    state.SetItemsProcessed(state.iterations());
}

// Recording settings, each applied before its benchmark and switched off after it.
enum class recording {
    memtrail_off,
    memtrail_trace,
    memtrail_frame_pointer_stacks,
    memtrail_libunwind_stacks,
    memtrail_eh_frame_stacks,
    torch_off,
    torch_trace,
    torch_cpp_stacks
};

const char* name_of(recording r) {
    switch (r) {
        case recording::memtrail_off:
            return "memtrail/off";
        case recording::memtrail_trace:
            return "memtrail/trace";
        case recording::memtrail_frame_pointer_stacks:
            return "memtrail/frame_pointer_stacks";
        case recording::memtrail_libunwind_stacks:
            return "memtrail/libunwind_stacks";
        case recording::memtrail_eh_frame_stacks:
            return "memtrail/eh_frame_stacks";
        case recording::torch_off:
            return "torch/off";
        case recording::torch_trace:
            return "torch/trace";
        case recording::torch_cpp_stacks:
            return "torch/cpp_stacks";
    }
    return "";
}

bool is_torch(recording r) {
    return r == recording::torch_off || r == recording::torch_trace ||
           r == recording::torch_cpp_stacks;
}

void apply(recording r) {
    recorder::history_options options;
    options.enabled = recorder::record_mode::all;
    switch (r) {
        case recording::memtrail_off:
            options.enabled = recorder::record_mode::off;
            break;
        case recording::memtrail_trace:
            options.context = recorder::context_mode::none;
            break;
        case recording::memtrail_frame_pointer_stacks:
            options.context = recorder::context_mode::all;
            options.stack_unwinder = recorder::unwinder::frame_pointer;
            break;
        case recording::memtrail_libunwind_stacks:
            options.context = recorder::context_mode::all;
            options.stack_unwinder = recorder::unwinder::libunwind;
            break;
        case recording::memtrail_eh_frame_stacks:
            options.context = recorder::context_mode::all;
            options.stack_unwinder = recorder::unwinder::eh_frame;
            break;
        case recording::torch_off:
            load_torch()->record_history(memtrail_torch_recording_off);
            return;
        case recording::torch_trace:
            load_torch()->record_history(memtrail_torch_recording_trace);
            return;
        case recording::torch_cpp_stacks:
            load_torch()->record_history(memtrail_torch_recording_trace_cpp_stacks);
            return;
    }
    memtrail_behind_recorder().record(options);
}

void switch_off(recording r) {
    apply(is_torch(r) ? recording::torch_off : recording::memtrail_off);
}

[[gnu::noinline]] void recorded_pairs(benchmark::State& state, backend& allocator) {
    pair(state, allocator, 512);
}

// Real programs allocate from deep stacks (PyTorch: 30 to 60 native frames), which is what
// stack capture pays for.
[[gnu::noinline]] void at_depth(int depth, benchmark::State& state, backend& allocator) {
    if (depth == 0) {
        recorded_pairs(state, allocator);
        return;
    }
    at_depth(depth - 1, state, allocator);
    benchmark::ClobberMemory();
}

// The same from frames built without frame pointers, as most distributions' and PyTorch's
// libraries are: what libunwind, the eh_frame unwinder and PyTorch's unwinder must walk.
[[gnu::noinline, gnu::optimize("omit-frame-pointer")]] void at_depth_without_frame_pointers(
    int depth, benchmark::State& state, backend& allocator) {
    if (depth == 0) {
        recorded_pairs(state, allocator);
        return;
    }
    at_depth_without_frame_pointers(depth - 1, state, allocator);
    benchmark::ClobberMemory();
}

std::vector<std::string> backend_names = {"memtrail", "memtrail_unbiased", "memtrail_recorder",
                                          "cudaMallocAsync", "cudaMalloc"};

void empty_all_caches(const benchmark::State&) {
    for (const auto& name : backend_names) {
        backend_named(name).empty_cache();
    }
}

void register_all() {
    if (load_torch() != nullptr) {
        backend_names.insert(backend_names.begin() + 3, "torch");
    }
    for (const auto& name : backend_names) {
        backend& allocator = backend_named(name);
        for (size_t size : {size_t{512}, size_t{1} << 20, size_t{20} << 20}) {
            benchmark::RegisterBenchmark(
                ("pair/" + name + "/" + std::to_string(size)).c_str(),
                [&allocator, size](benchmark::State& s) { pair(s, allocator, size); })
                ->ThreadRange(1, 8)
                ->UseRealTime()
                ->Teardown(empty_all_caches);
        }
        benchmark::RegisterBenchmark(
            ("random_mix/" + name).c_str(),
            [&allocator](benchmark::State& s) { random_mix(s, allocator); })
            ->ThreadRange(1, 8)
            ->UseRealTime()
            ->Teardown(empty_all_caches);
    }
    for (recording r :
         {recording::memtrail_off, recording::memtrail_trace,
          recording::memtrail_frame_pointer_stacks, recording::memtrail_libunwind_stacks,
          recording::memtrail_eh_frame_stacks, recording::torch_off, recording::torch_trace,
          recording::torch_cpp_stacks}) {
        if (is_torch(r) && load_torch() == nullptr) {
            continue;  // no PyTorch rows without libmemtrail_torch_allocator.so
        }
        backend& allocator = is_torch(r) ? static_cast<backend&>(torch_allocator())
                                         : static_cast<backend&>(memtrail_behind_recorder());
        for (int depth : {0, 40}) {
            benchmark::RegisterBenchmark((std::string("recording_pair_512/") + name_of(r) +
                                          "/extra_frames:" + std::to_string(depth))
                                             .c_str(),
                                         [&allocator, depth, r](benchmark::State& s) {
                                             apply(r);
                                             at_depth(depth, s, allocator);
                                             switch_off(r);
                                         });
        }
    }
    for (recording r :
         {recording::memtrail_off, recording::memtrail_libunwind_stacks,
          recording::memtrail_eh_frame_stacks, recording::torch_off, recording::torch_cpp_stacks}) {
        if (is_torch(r) && load_torch() == nullptr) {
            continue;  // no PyTorch rows without libmemtrail_torch_allocator.so
        }
        backend& allocator = is_torch(r) ? static_cast<backend&>(torch_allocator())
                                         : static_cast<backend&>(memtrail_behind_recorder());
        for (int depth : {0, 16, 32, 64}) {
            benchmark::RegisterBenchmark((std::string("recording_pair_512_no_frame_pointers/") +
                                          name_of(r) + "/extra_frames:" + std::to_string(depth))
                                             .c_str(),
                                         [&allocator, depth, r](benchmark::State& s) {
                                             apply(r);
                                             at_depth_without_frame_pointers(depth, s, allocator);
                                             switch_off(r);
                                         });
        }
    }
}

// Every allocator serves its first calls before any is timed: the first benchmark would
// otherwise pay for the process's CUDA start (context, driver threads).
void warm_up() {
    for (const auto& name : backend_names) {
        backend& allocator = backend_named(name);
        const int rounds = name == "cudaMalloc" ? 200 : 200000;
        for (int i = 0; i < rounds; ++i) {
            allocator.release(allocator.allocate(size_t{512} << (i % 16)));
        }
        allocator.empty_cache();
    }
}

// A crash names where it happened, on a machine without a debugger.
void report_crash(int signal_number) {
    void* frames[64];
    const int count = backtrace(frames, 64);
    const char message[] = "bench_side_by_side: crashed; stack:\n";
    (void)!write(STDERR_FILENO, message, sizeof message - 1);
    backtrace_symbols_fd(frames, count, STDERR_FILENO);
    signal(signal_number, SIG_DFL);
    raise(signal_number);
}

}  // namespace

int main(int argc, char** argv) {
    signal(SIGSEGV, report_crash);
    signal(SIGABRT, report_crash);
    if (cuda_device::count() == 0) {
        std::fprintf(stderr, "bench_side_by_side: no CUDA device visible\n");
        return 1;
    }
    register_all();
    benchmark::Initialize(&argc, argv);
    warm_up();
    benchmark::RunSpecifiedBenchmarks();
    benchmark::Shutdown();
    // The allocators live in function statics whose memory belongs to the GPU: leave without
    // destroying them after the CUDA runtime's own teardown.
    std::fflush(nullptr);
    std::_Exit(0);
}

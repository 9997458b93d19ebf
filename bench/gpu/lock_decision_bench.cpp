// The device lock's decision (issue 35), measured through librecorder as a user program links
// it: 512 B malloc/free pairs through the C API (memtrail_malloc, memtrail_free) on 1, 2, 4 and 8
// threads, with recording off and on (enabled "all", context "all", stacks as the default), and
// PyTorch's CUDACachingAllocator on the same device in the same process, off and recording C++
// stacks (libmemtrail_torch_allocator.so, see torch_allocator_loader.hpp; without it the PyTorch
// rows are left out). The "bare" rows are core's caching allocator alone, without librecorder,
// on the same kind of device (CUDA device 0 where one is visible, else a simulated one): what
// the C API's path costs is the gap between them and the memtrail rows. tests/gpu/lock_decision.sh
// runs it and writes the table; issue 35 chose the device lock with it (docs/configuration.md).
//   MEMTRAIL_DEVICE=sim build/bin/bench_lock_decision --repetitions 5 --seconds 0.2 --threads 1,2
// Prints one JSON object: for each row, the aggregate rate (pairs a second over all threads) of
// every repetition and their median, and the median CPU time a pair (all threads' CPU time over
// all their pairs: on a machine shared with other work, the steadier of the two).

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <memory>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "memtrail/core/caching_allocator.hpp"
#include "memtrail/core/simulated_device.hpp"
#include "memtrail/memtrail.h"
#include "torch_allocator_loader.hpp"
#ifdef MEMTRAIL_HAVE_CUDA
#include "memtrail/core/cuda_device.hpp"
#endif

namespace {

constexpr size_t pair_size = 512;
constexpr const char* program = "bench_lock_decision";

[[noreturn]] void fail(const std::string& what) {
    std::fprintf(stderr, "%s: %s\n", program, what.c_str());
    std::exit(1);
}

// An allocator under test: a 512 B allocation and its free.
struct allocator_calls {
    void* (*allocate)();
    void (*release)(void* pointer);
};

void* memtrail_allocate() {
    void* pointer = memtrail_malloc(pair_size, 0, nullptr);
    if (pointer == nullptr) {
        fail(std::string("memtrail_malloc failed: ") + memtrail_last_error());
    }
    return pointer;
}
void memtrail_release(void* pointer) {
    memtrail_free(pointer, pair_size, 0, nullptr);
}

const memtrail::bench::torch_functions* torch() {
    return memtrail::bench::load_torch(program);
}
void* torch_allocate() {
    void* pointer = torch()->allocate(pair_size);
    if (pointer == nullptr) {
        fail("PyTorch's raw_alloc failed");
    }
    return pointer;
}
void torch_release(void* pointer) {
    torch()->free(pointer);
}

// Core's allocator without librecorder, made on first use, on the device the memtrail rows use
// when they run on a GPU (librecorder's default), else on a simulated one.
struct bare_allocator {
    std::unique_ptr<memtrail::device> device;
    std::unique_ptr<memtrail::device_allocator> allocator;
    const char* device_kind = "sim";
};

bare_allocator make_bare() {
    bare_allocator bare;
#ifdef MEMTRAIL_HAVE_CUDA
    if (memtrail::cuda_device::count() > 0) {
        bare.device = std::make_unique<memtrail::cuda_device>(0);
        bare.device_kind = "cuda";
    }
#endif
    if (bare.device == nullptr) {
        bare.device =
            std::make_unique<memtrail::simulated_device>(memtrail::simulated_device_options{});
    }
    bare.allocator = std::make_unique<memtrail::device_allocator>(*bare.device);
    return bare;
}

bare_allocator& bare() {
    static bare_allocator made = make_bare();
    return made;
}
void* bare_allocate() {
    return reinterpret_cast<void*>(bare().allocator->allocate(pair_size, 0));
}
void bare_release(void* pointer) {
    bare().allocator->free(reinterpret_cast<memtrail::device_address>(pointer));
}

using clock_type = std::chrono::steady_clock;

// One thread's count, on a cache line of its own.
struct alignas(64) thread_count {
    uint64_t pairs = 0;
    clock_type::time_point end;
    double cpu_seconds = 0.0;  // the thread's CPU time in the timed part
};

double thread_cpu_seconds() {
    timespec now{};
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &now);
    return static_cast<double>(now.tv_sec) + static_cast<double>(now.tv_nsec) * 1e-9;
}

// One run's measurement: pairs a second over all threads (wall time), and CPU time a pair over
// all threads, which other programs on a shared machine inflate less than the wall time.
struct run_result {
    double pairs_per_second = 0.0;
    double cpu_ns_per_pair = 0.0;
};

// `threads` threads running pairs together for about `seconds`.
run_result measure_run(const allocator_calls& calls, int threads, double seconds) {
    std::atomic<int> ready{0};
    std::atomic<bool> go{false};
    std::atomic<bool> stop{false};
    std::vector<thread_count> counts(static_cast<size_t>(threads));
    std::vector<std::thread> workers;
    for (int t = 0; t < threads; ++t) {
        workers.emplace_back([&, t] {
            calls.release(calls.allocate());  // this thread's first call, untimed
            ready.fetch_add(1);
            while (!go.load(std::memory_order_acquire)) {
            }
            thread_count& mine = counts[static_cast<size_t>(t)];
            const double cpu_start = thread_cpu_seconds();
            while (!stop.load(std::memory_order_relaxed)) {
                for (int i = 0; i < 64; ++i) {
                    void* volatile pointer = calls.allocate();
                    calls.release(pointer);
                }
                mine.pairs += 64;
            }
            mine.end = clock_type::now();
            mine.cpu_seconds = thread_cpu_seconds() - cpu_start;
        });
    }
    while (ready.load() != threads) {
        std::this_thread::yield();
    }
    const clock_type::time_point start = clock_type::now();
    go.store(true, std::memory_order_release);
    std::this_thread::sleep_for(std::chrono::duration<double>(seconds));
    stop.store(true);
    for (auto& worker : workers) {
        worker.join();
    }
    uint64_t pairs = 0;
    double cpu_seconds = 0.0;
    clock_type::time_point end = start;
    for (const thread_count& count : counts) {
        pairs += count.pairs;
        cpu_seconds += count.cpu_seconds;
        end = std::max(end, count.end);
    }
    const double wall = std::chrono::duration<double>(end - start).count();
    return {static_cast<double>(pairs) / wall, cpu_seconds * 1e9 / static_cast<double>(pairs)};
}

struct options {
    int repetitions = 5;
    double seconds = 0.2;
    std::vector<int> threads = {1, 2, 4, 8};
};

// "1,2,8": thread counts from 1 to 256, in the order given.
std::vector<int> parse_thread_counts(const char* text) {
    std::vector<int> counts;
    const char* at = text;
    for (;;) {
        char* end = nullptr;
        const long count = std::strtol(at, &end, 10);
        if (end == at || count < 1 || count > 256 || (*end != ',' && *end != '\0')) {
            fail(std::string("--threads ") + text +
                 " is not a comma-separated list of thread counts from 1 to 256 (e.g. 1,2,4,8)");
        }
        counts.push_back(static_cast<int>(count));
        if (*end == '\0') {
            return counts;
        }
        at = end + 1;
    }
}

options parse_options(int argc, char** argv) {
    options parsed;
    for (int i = 1; i < argc; ++i) {
        const std::string_view flag = argv[i];
        if (i + 1 == argc) {
            fail("option " + std::string(flag) + " needs a value");
        }
        const char* value = argv[++i];
        char* end = nullptr;
        if (flag == "--repetitions") {
            parsed.repetitions = static_cast<int>(std::strtol(value, &end, 10));
            if (*end != '\0' || parsed.repetitions < 1) {
                fail(std::string("--repetitions ") + value +
                     " is not a whole number of at least 1");
            }
        } else if (flag == "--seconds") {
            parsed.seconds = std::strtod(value, &end);
            if (*end != '\0' || !(parsed.seconds > 0.0)) {
                fail(std::string("--seconds ") + value + " is not a positive number");
            }
        } else if (flag == "--threads") {
            parsed.threads = parse_thread_counts(value);
        } else {
            fail("unknown option " + std::string(flag) +
                 "; accepted: --repetitions N, --seconds S, --threads N[,N...]");
        }
    }
    return parsed;
}

double median(std::vector<double> values) {
    std::sort(values.begin(), values.end());
    return values[values.size() / 2];
}

// Prints one row of the JSON object's "rows": every repetition's rate and their median, and the
// median CPU time a pair.
void measure_row(const char* allocator, const char* recording, const allocator_calls& calls,
                 const options& o, bool& first_row) {
    for (int threads : o.threads) {
        std::vector<double> rates;
        std::vector<double> cpu_ns;
        for (int r = 0; r < o.repetitions; ++r) {
            const run_result run = measure_run(calls, threads, o.seconds);
            rates.push_back(run.pairs_per_second);
            cpu_ns.push_back(run.cpu_ns_per_pair);
        }
        const double rate = median(rates);
        const double cpu = median(cpu_ns);
        std::printf(
            "%s\n    {\"allocator\": \"%s\", \"recording\": \"%s\", \"threads\": %d, "
            "\"median_pairs_per_second\": %.0f, \"median_cpu_ns_per_pair\": %.1f, "
            "\"pairs_per_second\": [",
            first_row ? "" : ",", allocator, recording, threads, rate, cpu);
        for (size_t i = 0; i < rates.size(); ++i) {
            std::printf("%s%.0f", i == 0 ? "" : ", ", rates[i]);
        }
        std::printf("]}");
        std::fflush(stdout);
        std::fprintf(stderr,
                     "%s: %-8s recording %-3s %d threads: %8.3f M pairs/s, CPU %6.1f ns a pair\n",
                     program, allocator, recording, threads, rate / 1e6, cpu);
        first_row = false;
    }
}

void record_memtrail(bool on) {
    const int status = on ? memtrail_record_memory_history("all", "all", nullptr, 0)
                          : memtrail_record_memory_history("off", nullptr, nullptr, 0);
    if (status != 0) {
        fail(std::string("memtrail_record_memory_history failed: ") + memtrail_last_error());
    }
}

}  // namespace

int main(int argc, char** argv) {
    const options o = parse_options(argc, argv);
    const allocator_calls memtrail{memtrail_allocate, memtrail_release};
    const allocator_calls pytorch{torch_allocate, torch_release};
    const allocator_calls bare_calls{bare_allocate, bare_release};
    // Every allocator serves its first calls before any is timed (device start, cache warm).
    for (int i = 0; i < 100000; ++i) {
        memtrail.release(memtrail.allocate());
        bare_calls.release(bare_calls.allocate());
        if (torch() != nullptr) {
            pytorch.release(pytorch.allocate());
        }
    }
    std::printf(
        "{\"benchmark\": \"lock_decision\", \"pair_size\": %zu, \"seconds\": %g, "
        "\"repetitions\": %d, \"bare_device\": \"%s\", \"rows\": [",
        pair_size, o.seconds, o.repetitions, bare().device_kind);
    bool first_row = true;
    measure_row("bare", "off", bare_calls, o, first_row);
    record_memtrail(false);
    measure_row("memtrail", "off", memtrail, o, first_row);
    record_memtrail(true);
    // The trace ring (a million entries by default) full before anything is timed, as it is in a
    // long run: two entries a pair.
    for (int i = 0; i < 600000; ++i) {
        memtrail.release(memtrail.allocate());
    }
    measure_row("memtrail", "on", memtrail, o, first_row);
    record_memtrail(false);
    if (torch() != nullptr) {
        torch()->record_history(memtrail_torch_recording_off);
        measure_row("pytorch", "off", pytorch, o, first_row);
        // Its ring is not filled first: with C++ stacks a million entries take minutes.
        torch()->record_history(memtrail_torch_recording_trace_cpp_stacks);
        measure_row("pytorch", "on", pytorch, o, first_row);
        torch()->record_history(memtrail_torch_recording_off);
    }
    std::printf("\n]}\n");
    std::fflush(nullptr);
    // PyTorch's allocator and the CUDA runtime tear down in an order of their own: leave without
    // running static destructors.
    std::_Exit(0);
}

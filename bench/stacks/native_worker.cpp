// A thread that allocates the way autograd's worker does in PyTorch training, for
// bench/stacks/production_bench.py: a native thread with a Python thread state (made with the GIL,
// then released, as PyTorch's PythonEngine::thread_init does) but no Python frames, calling
// librecorder's memtrail_malloc and memtrail_free without the GIL until it is told to stop, each
// call timed.
// Python is found in the process at run time (dlsym), as librecorder finds it.

#include <dlfcn.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <thread>
#include <vector>

namespace {

using malloc_function = void* (*)(ptrdiff_t size, int device, void* stream);
using free_function = void (*)(void* pointer, ptrdiff_t size, int device, void* stream);

struct python_thread_api {
    int (*gil_ensure)() = nullptr;
    void (*gil_release)(int) = nullptr;
    void* (*save_thread)() = nullptr;
    void (*restore_thread)(void*) = nullptr;

    bool found() const {
        return gil_ensure != nullptr && gil_release != nullptr && save_thread != nullptr &&
               restore_thread != nullptr;
    }
};

python_thread_api find_python_thread_api() {
    python_thread_api api;
    api.gil_ensure = reinterpret_cast<int (*)()>(dlsym(RTLD_DEFAULT, "PyGILState_Ensure"));
    api.gil_release = reinterpret_cast<void (*)(int)>(dlsym(RTLD_DEFAULT, "PyGILState_Release"));
    api.save_thread = reinterpret_cast<void* (*)()>(dlsym(RTLD_DEFAULT, "PyEval_SaveThread"));
    api.restore_thread =
        reinterpret_cast<void (*)(void*)>(dlsym(RTLD_DEFAULT, "PyEval_RestoreThread"));
    return api;
}

// Gradients' sizes, as a backward pass's vary.
constexpr ptrdiff_t sizes[] = {4096, 1 << 20, 3 << 20, 512, 8 << 20, 65536, 2 << 20, 16384};
constexpr size_t burst = std::size(sizes);

std::thread worker;
std::atomic<bool> stop{false};
std::atomic<bool> ready{false};
// Each call's time, malloc and free apart (reserved ahead: a growing vector would be timed).
constexpr size_t most_timed_calls = size_t{1} << 22;
std::vector<uint32_t> malloc_ns;
std::vector<uint32_t> free_ns;

uint32_t nanoseconds_since(std::chrono::steady_clock::time_point start) {
    return static_cast<uint32_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                     std::chrono::steady_clock::now() - start)
                                     .count());
}

double median(std::vector<uint32_t>& values) {
    if (values.empty()) {
        return 0;
    }
    const auto middle = values.begin() + static_cast<ptrdiff_t>(values.size() / 2);
    std::nth_element(values.begin(), middle, values.end());
    return *middle;
}

void run(malloc_function allocate, free_function release, bool with_thread_state) {
    const python_thread_api python = find_python_thread_api();
    const bool python_state = with_thread_state && python.found();
    int gil_state = 0;
    void* saved = nullptr;
    if (python_state) {
        gil_state = python.gil_ensure();
        saved = python.save_thread();
    }
    ready.store(true, std::memory_order_release);
    void* held[burst];
    while (!stop.load(std::memory_order_relaxed) && malloc_ns.size() + burst <= most_timed_calls) {
        for (size_t i = 0; i < burst; ++i) {
            const auto start = std::chrono::steady_clock::now();
            held[i] = allocate(sizes[i], 0, nullptr);
            malloc_ns.push_back(nanoseconds_since(start));
        }
        for (size_t i = burst; i-- > 0;) {
            const auto start = std::chrono::steady_clock::now();
            release(held[i], sizes[i], 0, nullptr);
            free_ns.push_back(nanoseconds_since(start));
        }
    }
    if (python_state) {
        python.restore_thread(saved);
        python.gil_release(gil_state);
    }
}

}  // namespace

// Starts the worker, and returns once it allocates. with_thread_state: give it a Python thread
// state, as autograd's worker has. 0 on success, -1 when a worker runs already.
extern "C" int memtrail_bench_worker_start(void* allocate, void* release, int with_thread_state) {
    if (worker.joinable()) {
        return -1;
    }
    stop.store(false);
    ready.store(false);
    malloc_ns.clear();
    free_ns.clear();
    malloc_ns.reserve(most_timed_calls);
    free_ns.reserve(most_timed_calls);
    worker = std::thread(run, reinterpret_cast<malloc_function>(allocate),
                         reinterpret_cast<free_function>(release), with_thread_state != 0);
    while (!ready.load(std::memory_order_acquire)) {
        std::this_thread::yield();
    }
    return 0;
}

// Stops the worker; its median malloc call plus its median free call in nanoseconds, or -1 when
// none runs.
extern "C" double memtrail_bench_worker_stop() {
    if (!worker.joinable()) {
        return -1;
    }
    stop.store(true);
    worker.join();
    return median(malloc_ns) + median(free_ns);
}

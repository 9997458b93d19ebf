// A plain CUDA runtime program, linked with the shared runtime and knowing nothing of memtrail:
// what `memtrail run` must record unchanged (test_run.py). It runs on the simulated device, so it
// uses only the runtime calls the interposer answers there, and no kernels.
//
//   run_program            allocate, copy, check, free some, exit 0
//   run_program exit N     the same, then exit with status N
//   run_program wait       the same, then wait for signals (SIGUSR1 is left to memtrail)
//   run_program oom        the same, then ask for more than the device has, and report it
//   run_program _exit N    the same, then _exit(N): no exit handlers run
//   run_program fork       the same, then fork children while threads allocate: each child
//                          allocates and exits (its exit dump included) under an alarm

#include <cuda_runtime_api.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <vector>

namespace {

void check(cudaError_t status, const char* what) {
    if (status != cudaSuccess) {
        std::fprintf(stderr, "run_program: %s: %s\n", what, cudaGetErrorString(status));
        std::exit(10);
    }
}

// Kept out of line so that the recorded stacks name them.
[[gnu::noinline]] void* allocate_weights(size_t bytes) {
    void* pointer = nullptr;
    check(cudaMalloc(&pointer, bytes), "cudaMalloc weights");
    return pointer;
}

[[gnu::noinline]] void* allocate_activations(size_t bytes) {
    void* pointer = nullptr;
    check(cudaMalloc(&pointer, bytes), "cudaMalloc activations");
    return pointer;
}

[[gnu::noinline]] void copy_round_trip(void* device, size_t bytes) {
    std::vector<unsigned char> out(bytes), back(bytes);
    for (size_t i = 0; i < bytes; ++i) {
        out[i] = static_cast<unsigned char>(i * 7);
    }
    check(cudaMemcpy(device, out.data(), bytes, cudaMemcpyHostToDevice), "cudaMemcpy to device");
    check(cudaMemcpy(back.data(), device, bytes, cudaMemcpyDeviceToHost), "cudaMemcpy to host");
    if (std::memcmp(out.data(), back.data(), bytes) != 0) {
        std::fprintf(stderr, "run_program: the copy came back different\n");
        std::exit(11);
    }
    check(cudaMemsetAsync(device, 1, bytes, nullptr), "cudaMemsetAsync");
    check(cudaMemcpyAsync(back.data(), device, bytes, cudaMemcpyDeviceToHost, nullptr),
          "cudaMemcpyAsync");
    check(cudaStreamSynchronize(nullptr), "cudaStreamSynchronize");
    if (back[0] != 1 || back[bytes - 1] != 1) {
        std::fprintf(stderr, "run_program: cudaMemsetAsync did not set the bytes\n");
        std::exit(13);
    }
    check(cudaMemset(device, 0, bytes), "cudaMemset");
    check(cudaMemcpy(back.data(), device, bytes, cudaMemcpyDeviceToHost), "cudaMemcpy zeros");
    for (const unsigned char byte : back) {
        if (byte != 0) {
            std::fprintf(stderr, "run_program: cudaMemset left a byte set\n");
            std::exit(12);
        }
    }
}

// Children forked while other threads allocate through the interposer: each allocates, frees
// and exits. Returns how many of `count` exited 0; one that hangs is killed by its alarm.
int fork_children(int count) {
    std::atomic<bool> stop{false};
    std::vector<std::thread> threads;
    for (int t = 0; t < 3; ++t) {
        threads.emplace_back([&stop] {
            while (!stop.load(std::memory_order_relaxed)) {
                void* pointer = nullptr;
                if (cudaMalloc(&pointer, 4096 + 512 * (std::rand() % 64)) == cudaSuccess) {
                    cudaFree(pointer);
                }
            }
        });
    }
    int finished = 0;
    for (int c = 0; c < count; ++c) {
        usleep(2000);
        const pid_t child = fork();
        if (child == 0) {
            alarm(20);
            void* pointer = allocate_activations(1 << 20);
            check(cudaFree(pointer), "cudaFree in a child");
            std::exit(0);  // the exit dump runs
        }
        int status = 0;
        waitpid(child, &status, 0);
        if (WIFEXITED(status) && WEXITSTATUS(status) == 0) {
            ++finished;
        } else {
            std::fprintf(stderr, "run_program: child %d %s %d\n", c,
                         WIFSIGNALED(status) ? "killed by signal" : "exited with",
                         WIFSIGNALED(status) ? WTERMSIG(status) : WEXITSTATUS(status));
        }
    }
    stop = true;
    for (auto& thread : threads) {
        thread.join();
    }
    return finished;
}

}  // namespace

int main(int argc, char** argv) {
    int devices = 0;
    check(cudaGetDeviceCount(&devices), "cudaGetDeviceCount");
    check(cudaSetDevice(0), "cudaSetDevice");

    void* weights = allocate_weights(3 << 20);
    void* activations = allocate_activations(5 << 20);
    void* scratch = allocate_activations(4096);
    copy_round_trip(weights, 3 << 20);
    check(cudaFree(activations), "cudaFree");

    size_t free_bytes = 0;
    size_t total_bytes = 0;
    check(cudaMemGetInfo(&free_bytes, &total_bytes), "cudaMemGetInfo");
    std::printf("devices %d, free %zu of %zu\n", devices, free_bytes, total_bytes);
    std::fflush(stdout);

    const char* action = argc > 1 ? argv[1] : "";
    if (std::strcmp(action, "exit") == 0 && argc > 2) {
        return std::atoi(argv[2]);
    }
    if (std::strcmp(action, "_exit") == 0 && argc > 2) {
        _exit(std::atoi(argv[2]));
    }
    if (std::strcmp(action, "wait") == 0) {
        std::printf("waiting\n");
        std::fflush(stdout);
        for (;;) {
            pause();
        }
    }
    if (std::strcmp(action, "fork") == 0) {
        constexpr int children = 20;
        const int finished = fork_children(children);
        std::printf("children finished: %d of %d\n", finished, children);
        if (finished != children) {
            return 14;
        }
    }
    if (std::strcmp(action, "oom") == 0) {
        void* too_much = nullptr;
        const cudaError_t status = cudaMalloc(&too_much, total_bytes * 2);
        std::printf("oversized cudaMalloc: %s\n", cudaGetErrorName(status));
        if (cudaGetLastError() != status) {
            std::fprintf(stderr, "run_program: cudaGetLastError does not report the failure\n");
            return 13;
        }
    }
    check(cudaFree(scratch), "cudaFree scratch");
    (void)weights;  // still held at exit: the snapshot shows it
    return 0;
}

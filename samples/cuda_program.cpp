// cuda_program: a CUDA program whose device memory comes from memtrail (librecorder.so).
//
// memtrail_malloc/memtrail_free replace cudaMalloc/cudaFree; the memory is ordinary device
// memory, used here by cudaMemsetAsync and cudaMemcpyAsync on a stream of the program's own. Run
// with recording switched on from the environment, and a snapshot is written at the end:
//
//   MEMTRAIL_RECORD=all build/bin/sample_cuda_program cuda_program.memtrail
//
// Built only when memtrail is built with the CUDA toolkit. Without a GPU, run it on the simulated
// device under `memtrail run`, which answers its CUDA runtime calls over host memory:
//
//   build/bin/memtrail run --device sim:4GiB -- build/bin/sample_cuda_program cuda_program.memtrail

#include <cuda_runtime.h>

#include <cstdio>
#include <vector>

#include "memtrail/memtrail.h"

namespace {

bool cuda_ok(cudaError_t status, const char* what) {
    if (status != cudaSuccess) {
        std::fprintf(stderr, "%s: %s\n", what, cudaGetErrorString(status));
        return false;
    }
    return true;
}

}  // namespace

int main(int argc, char** argv) {
    const char* path = argc > 1 ? argv[1] : "cuda_program.memtrail";
    cudaStream_t stream = nullptr;
    if (!cuda_ok(cudaStreamCreate(&stream), "cudaStreamCreate")) {
        return 1;
    }
    // Without MEMTRAIL_RECORD in the environment, switch recording on here.
    if (memtrail_record_memory_history("all", "all", "native", 0) != 0) {
        std::fprintf(stderr, "memtrail: %s\n", memtrail_last_error());
        return 1;
    }

    constexpr size_t count = 1 << 22;
    std::vector<float> host(count, 0.0f);
    for (int round = 0; round < 4; ++round) {
        memtrail_range_start("round");
        // The stream is a plain cudaStream_t: blocks are cached and reused per stream.
        auto* device_buffer = static_cast<float*>(
            memtrail_malloc(static_cast<ssize_t>(count * sizeof(float)), 0, stream));
        if (device_buffer == nullptr) {
            std::fprintf(stderr, "memtrail_malloc: %s\n", memtrail_last_error());
            return 1;
        }
        if (!cuda_ok(cudaMemsetAsync(device_buffer, 0, count * sizeof(float), stream), "memset") ||
            !cuda_ok(cudaMemcpyAsync(host.data(), device_buffer, count * sizeof(float),
                                     cudaMemcpyDeviceToHost, stream),
                     "memcpy") ||
            !cuda_ok(cudaStreamSynchronize(stream), "synchronize")) {
            return 1;
        }
        memtrail_free(device_buffer, static_cast<ssize_t>(count * sizeof(float)), 0, stream);
        memtrail_range_end("round");
    }

    std::printf("%s\n", memtrail_memory_summary(0));
    if (memtrail_dump_snapshot(path) != 0) {
        std::fprintf(stderr, "memtrail: %s\n", memtrail_last_error());
        return 1;
    }
    std::printf("snapshot written to %s\n", path);
    cudaStreamDestroy(stream);
    return 0;
}

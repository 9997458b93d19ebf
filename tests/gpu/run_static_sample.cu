// A CUDA program built with nvcc's defaults (the static CUDA runtime inside it) that knows nothing
// of memtrail: tests/gpu/run.sh runs it alone and under `memtrail run`, in both modes.
//   run_static_sample [ITERATIONS]
#include <cstdio>
#include <cstdlib>

#define CHECK(call)                                                                   \
    do {                                                                              \
        cudaError_t status = (call);                                                  \
        if (status != cudaSuccess) {                                                  \
            std::fprintf(stderr, "%s: %s\n", #call, cudaGetErrorString(status));      \
            std::exit(1);                                                             \
        }                                                                             \
    } while (0)

__global__ void scale(float* data, size_t n, float factor) {
    const size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x;
    if (i < n) {
        data[i] = data[i] * factor + 1.0f;
    }
}

__attribute__((noinline)) float* allocate_layer(size_t n) {
    float* data = nullptr;
    CHECK(cudaMalloc(&data, n * sizeof(float)));
    CHECK(cudaMemset(data, 0, n * sizeof(float)));
    return data;
}

int main(int argc, char** argv) {
    const int iterations = argc > 1 ? std::atoi(argv[1]) : 200;
    cudaStream_t stream;
    CHECK(cudaStreamCreate(&stream));
    for (int step = 0; step < iterations; ++step) {
        float* layers[8];
        for (int l = 0; l < 8; ++l) {
            const size_t n = size_t(1) << (16 + (l + step) % 8);
            layers[l] = allocate_layer(n);
            scale<<<(n + 255) / 256, 256>>>(layers[l], n, 2.0f);
        }
        void* async_buffer = nullptr;
        CHECK(cudaMallocAsync(&async_buffer, 4 << 20, stream));
        CHECK(cudaFreeAsync(async_buffer, stream));
        CHECK(cudaDeviceSynchronize());
        for (int l = 0; l < 8; ++l) {
            CHECK(cudaFree(layers[l]));
        }
    }
    CHECK(cudaStreamDestroy(stream));
    std::printf("run_static_sample: %d iterations\n", iterations);
    return 0;
}

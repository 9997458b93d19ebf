// A cuBLAS program that knows nothing of memtrail: cuBLAS allocates its own workspace, which
// `memtrail run --mode observe` must show (tests/gpu/run.sh).
//   run_cublas_sample [ITERATIONS]
#include <cublas_v2.h>

#include <cstdio>
#include <cstdlib>

#define CHECK(call)                                                                   \
    do {                                                                              \
        if ((call) != 0) {                                                            \
            std::fprintf(stderr, "%s failed\n", #call);                               \
            std::exit(1);                                                             \
        }                                                                             \
    } while (0)

int main(int argc, char** argv) {
    const int iterations = argc > 1 ? std::atoi(argv[1]) : 200;
    const int n = 2048;
    float *a = nullptr, *b = nullptr, *c = nullptr;
    CHECK(cudaMalloc(&a, sizeof(float) * n * n));
    CHECK(cudaMalloc(&b, sizeof(float) * n * n));
    CHECK(cudaMalloc(&c, sizeof(float) * n * n));
    CHECK(cudaMemset(a, 0, sizeof(float) * n * n));
    CHECK(cudaMemset(b, 0, sizeof(float) * n * n));
    cublasHandle_t handle;
    CHECK(cublasCreate(&handle));
    const float one = 1.0f, zero = 0.0f;
    for (int i = 0; i < iterations; ++i) {
        CHECK(cublasSgemm(handle, CUBLAS_OP_N, CUBLAS_OP_N, n, n, n, &one, a, n, b, n, &zero, c, n));
    }
    CHECK(cudaDeviceSynchronize());
    CHECK(cublasDestroy(handle));
    CHECK(cudaFree(a));
    CHECK(cudaFree(b));
    CHECK(cudaFree(c));
    std::printf("run_cublas_sample: %d GEMMs of %d x %d\n", iterations, n, n);
    return 0;
}

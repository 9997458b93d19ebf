// libfakeblas.so: a library that allocates device memory of its own with cudaMalloc, as cuBLAS
// does for its workspaces, and pins host memory with cudaHostAlloc, as PyTorch's pinned memory
// does. test_run.py calls it beside the stand-in PyTorch that allocates through memtrail: its
// memory must reach CUDA untouched and be recorded as outside the allocator, named for it.

#include <cuda_runtime_api.h>

#include <cstring>

extern "C" {

// A workspace of `bytes`, written and read back through CUDA; NULL when CUDA refused it or the
// bytes did not come back.
[[gnu::visibility("default")]] void* fakeblas_create_workspace(size_t bytes) {
    void* workspace = nullptr;
    if (cudaMalloc(&workspace, bytes) != cudaSuccess) {
        return nullptr;
    }
    unsigned char sent[64];
    unsigned char back[64] = {};
    std::memset(sent, 0x5a, sizeof sent);
    if (cudaMemcpy(workspace, sent, sizeof sent, cudaMemcpyHostToDevice) != cudaSuccess ||
        cudaMemcpy(back, workspace, sizeof back, cudaMemcpyDeviceToHost) != cudaSuccess ||
        std::memcmp(sent, back, sizeof back) != 0) {
        return nullptr;
    }
    return workspace;
}

[[gnu::visibility("default")]] int fakeblas_destroy_workspace(void* workspace) {
    return cudaFree(workspace) == cudaSuccess ? 0 : -1;
}

[[gnu::visibility("default")]] void* fakeblas_pin(size_t bytes) {
    void* pinned = nullptr;
    if (cudaHostAlloc(&pinned, bytes, cudaHostAllocDefault) != cudaSuccess) {
        return nullptr;
    }
    std::memset(pinned, 1, bytes);  // host memory: the program writes it directly
    return pinned;
}

[[gnu::visibility("default")]] int fakeblas_unpin(void* pinned) {
    return cudaFreeHost(pinned) == cudaSuccess ? 0 : -1;
}

}  // extern "C"

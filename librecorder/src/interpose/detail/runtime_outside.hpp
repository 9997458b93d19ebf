#pragma once
// What the runtime's allocation hooks share (runtime_hooks.cpp, runtime_host_hooks.cpp): the
// current device, and the pass-through of a call recorded as memory outside the allocator when
// PyTorch allocates through memtrail.

#include <cuda_runtime_api.h>

#include <cstdlib>

#include "device_memory.hpp"
#include "real_symbols.hpp"
#include "simulated_memory.hpp"

namespace memtrail::interpose {

// Alignment of the host memory standing in for device memory: cudaMalloc's guarantee.
inline constexpr size_t device_alignment = 256;

inline int current_runtime_device() {
    static const auto get_device = runtime_function<decltype(&cudaGetDevice)>("cudaGetDevice");
    int device = 0;
    if (get_device == nullptr || get_device(&device) != cudaSuccess) {
        return 0;
    }
    return device;
}

// PyTorch on memtrail: CUDA makes the allocation (`real`, which sets *pointer), memtrail records
// it as outside its allocator.
template <typename Real>
MEMTRAIL_INLINE cudaError_t runtime_allocate_outside(void** pointer, size_t size, int kind,
                                                     cudaStream_t stream, const char* call,
                                                     Real&& real) {
    cudaError_t result = cudaSuccess;
    {
        const passing_through inside;
        result = real();
    }
    if (result == cudaSuccess && *pointer != nullptr) {
        outside_allocated(*pointer, size, kind, current_runtime_device(), stream, call);
    }
    return result;
}

// Its free: false when memtrail recorded no such allocation (the caller frees it as before).
MEMTRAIL_INLINE bool runtime_free_outside(void* pointer, int kind, cudaStream_t stream,
                                          const char* call) {
    if (memtrail_outside_free(pointer, kind, current_runtime_device(), stream) == 0) {
        return true;
    }
    if (memtrail_last_error_code() != MEMTRAIL_ERROR_UNKNOWN_POINTER) {
        report_failure(call);
    }
    return false;
}

// The simulated device's outside allocation: host memory, recorded (and taken from the device's
// capacity for device memory); cudaErrorMemoryAllocation when there is no room.
MEMTRAIL_INLINE cudaError_t simulated_allocate_outside(void** pointer, size_t size, int kind,
                                                       cudaStream_t stream, const char* call) {
    const size_t rounded = (size + device_alignment - 1) / device_alignment * device_alignment;
    void* host = std::aligned_alloc(device_alignment, rounded != 0 ? rounded : device_alignment);
    if (host == nullptr) {
        return cudaErrorMemoryAllocation;
    }
    if (!outside_allocated(host, size, kind, 0, stream, call)) {
        std::free(host);
        return cudaErrorMemoryAllocation;
    }
    if (kind == MEMTRAIL_OUTSIDE_DEVICE) {
        simulated_memory::get().adopt(host, rounded);
    }
    *pointer = host;
    return cudaSuccess;
}

}  // namespace memtrail::interpose

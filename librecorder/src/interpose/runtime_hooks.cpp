// The CUDA runtime's device allocation calls, for programs linked with the shared runtime
// (libcudart.so): these definitions come first in the symbol search (LD_PRELOAD).

#include <cuda_runtime_api.h>

#include <cstdlib>

#include "detail/device_memory.hpp"
#include "detail/interpose_settings.hpp"
#include "detail/real_symbols.hpp"
#include "detail/runtime_outside.hpp"
#include "detail/simulated_memory.hpp"
#include "detail/simulated_runtime.hpp"

namespace memtrail::interpose {

namespace {

cudaError_t to_runtime_error(memory_result result) {
    switch (result) {
        case memory_result::ok:
            return cudaSuccess;
        case memory_result::out_of_memory:
            return cudaErrorMemoryAllocation;
        case memory_result::failed:
            return cudaErrorUnknown;
    }
    return cudaErrorUnknown;
}

MEMTRAIL_INLINE cudaError_t simulated_allocate(void** pointer, size_t size, cudaStream_t stream,
                                               const char* call) {
    if (pytorch_allocates_here()) {
        return simulated_allocate_outside(pointer, size, MEMTRAIL_OUTSIDE_DEVICE, stream, call);
    }
    if (settings().mode == interpose_mode::cache) {
        // memtrail_malloc puts host memory behind the block (memtrail_interpose_back_simulated).
        return to_runtime_error(cache_allocate(pointer, size, 0, stream, call));
    }
    // observe: the simulated device's own allocation is host memory, within its capacity.
    size_t free_bytes = 0;
    size_t total_bytes = 0;
    if (!memory_info(0, &free_bytes, &total_bytes, call)) {
        return cudaErrorUnknown;
    }
    const size_t rounded = (size + device_alignment - 1) / device_alignment * device_alignment;
    if (rounded > total_bytes - simulated_memory::get().used()) {
        return cudaErrorMemoryAllocation;
    }
    void* host = std::aligned_alloc(device_alignment, rounded != 0 ? rounded : device_alignment);
    if (host == nullptr) {
        return cudaErrorMemoryAllocation;
    }
    simulated_memory::get().adopt(host, rounded);
    observe_allocated(host, size, 0, stream, call);
    *pointer = host;
    return cudaSuccess;
}

MEMTRAIL_INLINE cudaError_t simulated_free(void* pointer, cudaStream_t stream, const char* call) {
    if (pointer == nullptr) {
        return cudaSuccess;
    }
    const auto address = reinterpret_cast<uint64_t>(pointer);
    if (pytorch_allocates_here() &&
        runtime_free_outside(pointer, MEMTRAIL_OUTSIDE_DEVICE, stream, call)) {
        return simulated_memory::get().release(address) ? cudaSuccess : cudaErrorInvalidValue;
    }
    if (settings().mode == interpose_mode::cache) {
        // memtrail_free releases the host memory behind it.
        return cache_free(pointer, stream) ? cudaSuccess : cudaErrorInvalidValue;
    }
    observe_freeing(pointer, 0, call);
    return simulated_memory::get().release(address) ? cudaSuccess : cudaErrorInvalidValue;
}

MEMTRAIL_INLINE cudaError_t allocate(void** pointer, size_t size, cudaStream_t stream,
                                     const char* call,
                                     cudaError_t (*real)(void**, size_t, cudaStream_t)) {
    if (pointer == nullptr) {
        return settings().simulated ? simulated_result(cudaErrorInvalidValue)
                                    : cudaErrorInvalidValue;
    }
    if (settings().simulated) {
        return simulated_result(simulated_allocate(pointer, size, stream, call));
    }
    if (passing_through::active()) {
        return real(pointer, size, stream);
    }
    if (pytorch_allocates_here()) {
        return runtime_allocate_outside(pointer, size, MEMTRAIL_OUTSIDE_DEVICE, stream, call,
                                        [&] { return real(pointer, size, stream); });
    }
    const int device = current_runtime_device();
    if (settings().mode == interpose_mode::cache) {
        return to_runtime_error(cache_allocate(pointer, size, device, stream, call));
    }
    const cudaError_t result = real(pointer, size, stream);
    if (result == cudaSuccess && *pointer != nullptr) {
        observe_allocated(*pointer, size, device, stream, call);
    }
    return result;
}

MEMTRAIL_INLINE cudaError_t release(void* pointer, cudaStream_t stream, const char* call,
                                    cudaError_t (*real)(void*, cudaStream_t)) {
    if (settings().simulated) {
        return simulated_result(simulated_free(pointer, stream, call));
    }
    if (passing_through::active()) {
        return real(pointer, stream);
    }
    if (pytorch_allocates_here() && pointer != nullptr) {
        // Recorded outside, or else served by memtrail's allocator before PyTorch moved to it.
        if (!runtime_free_outside(pointer, MEMTRAIL_OUTSIDE_DEVICE, stream, call) &&
            cache_free(pointer, stream)) {
            return cudaSuccess;
        }
        const passing_through inside;
        return real(pointer, stream);
    }
    // cudaFree(nullptr) is how programs start CUDA: it reaches CUDA in every mode.
    if (pointer != nullptr) {
        if (settings().mode == interpose_mode::cache) {
            if (cache_free(pointer, stream)) {
                return cudaSuccess;
            }
        } else {
            observe_freeing(pointer, current_runtime_device(), call);
        }
    }
    return real(pointer, stream);
}

cudaError_t real_malloc(void** pointer, size_t size, cudaStream_t) {
    static const auto f = runtime_function<decltype(&cudaMalloc)>("cudaMalloc");
    return f != nullptr ? f(pointer, size) : cudaErrorInitializationError;
}

cudaError_t real_malloc_async(void** pointer, size_t size, cudaStream_t stream) {
    static const auto f = runtime_function<decltype(&cudaMallocAsync)>("cudaMallocAsync");
    return f != nullptr ? f(pointer, size, stream) : cudaErrorInitializationError;
}

cudaError_t real_free(void* pointer, cudaStream_t) {
    static const auto f = runtime_function<decltype(&cudaFree)>("cudaFree");
    return f != nullptr ? f(pointer) : cudaErrorInitializationError;
}

cudaError_t real_free_async(void* pointer, cudaStream_t stream) {
    static const auto f = runtime_function<decltype(&cudaFreeAsync)>("cudaFreeAsync");
    return f != nullptr ? f(pointer, stream) : cudaErrorInitializationError;
}

}  // namespace

}  // namespace memtrail::interpose

using namespace memtrail::interpose;

extern "C" {

cudaError_t CUDARTAPI cudaMalloc(void** devPtr, size_t size) {
    return allocate(devPtr, size, nullptr, "cudaMalloc", real_malloc);
}

cudaError_t CUDARTAPI cudaMallocAsync(void** devPtr, size_t size, cudaStream_t hStream) {
    return allocate(devPtr, size, hStream, "cudaMallocAsync", real_malloc_async);
}

cudaError_t CUDARTAPI cudaFree(void* devPtr) {
    return release(devPtr, nullptr, "cudaFree", real_free);
}

cudaError_t CUDARTAPI cudaFreeAsync(void* devPtr, cudaStream_t hStream) {
    return release(devPtr, hStream, "cudaFreeAsync", real_free_async);
}

cudaError_t CUDARTAPI cudaMemGetInfo(size_t* free, size_t* total) {
    if (free == nullptr || total == nullptr) {
        return settings().simulated ? simulated_result(cudaErrorInvalidValue)
                                    : cudaErrorInvalidValue;
    }
    if (settings().simulated) {
        if (!memory_info(0, free, total, "cudaMemGetInfo")) {
            return simulated_result(cudaErrorUnknown);
        }
        if (settings().mode == interpose_mode::observe) {
            *free = *total - simulated_memory::get().used();
        }
        return cudaSuccess;
    }
    // PyTorch on memtrail sees the device as PyTorch alone would: its cache counts as used.
    if (settings().mode == interpose_mode::cache && reached_memtrail() &&
        !pytorch_allocates_here()) {
        return memory_info(current_runtime_device(), free, total, "cudaMemGetInfo")
                   ? cudaSuccess
                   : cudaErrorUnknown;
    }
    static const auto real = runtime_function<decltype(&cudaMemGetInfo)>("cudaMemGetInfo");
    return real != nullptr ? real(free, total) : cudaErrorInitializationError;
}

}  // extern "C"

// The runtime's pinned host memory calls (cudaHostAlloc, cudaMallocHost, cudaHostRegister and
// their frees; PyTorch's pinned memory comes from cudaHostAlloc): untouched, and recorded as
// host memory outside the allocator when PyTorch allocates through memtrail. On the simulated
// device they are answered here, with ordinary host memory.

#include <cuda_runtime_api.h>

#include <cstdlib>

#include "detail/interpose_settings.hpp"
#include "detail/runtime_outside.hpp"
#include "detail/simulated_runtime.hpp"

namespace memtrail::interpose {

namespace {

template <typename Real>
MEMTRAIL_INLINE cudaError_t host_allocate(void** pointer, size_t size, const char* call,
                                          Real&& real) {
    if (pointer == nullptr) {
        return settings().simulated ? simulated_result(cudaErrorInvalidValue)
                                    : cudaErrorInvalidValue;
    }
    const bool records = !passing_through::active() && pytorch_allocates_here();
    if (settings().simulated) {
        if (records) {
            return simulated_result(simulated_allocate_outside(
                pointer, size, MEMTRAIL_OUTSIDE_PINNED_HOST, nullptr, call));
        }
        *pointer = std::malloc(size != 0 ? size : 1);
        return *pointer != nullptr ? cudaSuccess : simulated_result(cudaErrorMemoryAllocation);
    }
    if (!records) {
        return real();
    }
    return runtime_allocate_outside(pointer, size, MEMTRAIL_OUTSIDE_PINNED_HOST, nullptr, call,
                                    real);
}

template <typename Real>
MEMTRAIL_INLINE cudaError_t host_free(void* pointer, const char* call, Real&& real) {
    if (pointer != nullptr && !passing_through::active() && pytorch_allocates_here()) {
        runtime_free_outside(pointer, MEMTRAIL_OUTSIDE_PINNED_HOST, nullptr, call);
    }
    if (settings().simulated) {
        std::free(pointer);
        return cudaSuccess;
    }
    const passing_through inside;
    return real();
}

}  // namespace

}  // namespace memtrail::interpose

using namespace memtrail::interpose;

extern "C" {

cudaError_t CUDARTAPI cudaHostAlloc(void** pHost, size_t size, unsigned int flags) {
    static const auto real = runtime_function<decltype(&cudaHostAlloc)>("cudaHostAlloc");
    return host_allocate(pHost, size, "cudaHostAlloc", [&] {
        return real != nullptr ? real(pHost, size, flags) : cudaErrorInitializationError;
    });
}

cudaError_t CUDARTAPI cudaMallocHost(void** ptr, size_t size) {
    static const auto real = runtime_function<cudaError_t (*)(void**, size_t)>("cudaMallocHost");
    return host_allocate(ptr, size, "cudaMallocHost", [&] {
        return real != nullptr ? real(ptr, size) : cudaErrorInitializationError;
    });
}

cudaError_t CUDARTAPI cudaFreeHost(void* ptr) {
    static const auto real = runtime_function<decltype(&cudaFreeHost)>("cudaFreeHost");
    return host_free(ptr, "cudaFreeHost",
                     [&] { return real != nullptr ? real(ptr) : cudaErrorInitializationError; });
}

// Registering pins memory the program already has: recorded, never allocated here. On the
// simulated device there is nothing to pin.
cudaError_t CUDARTAPI cudaHostRegister(void* ptr, size_t size, unsigned int flags) {
    static const auto real = runtime_function<decltype(&cudaHostRegister)>("cudaHostRegister");
    if (ptr == nullptr || passing_through::active() || !pytorch_allocates_here()) {
        if (settings().simulated) {
            return ptr != nullptr ? cudaSuccess : simulated_result(cudaErrorInvalidValue);
        }
        return real != nullptr ? real(ptr, size, flags) : cudaErrorInitializationError;
    }
    void* registered = ptr;
    return runtime_allocate_outside(
        &registered, size, MEMTRAIL_OUTSIDE_PINNED_HOST, nullptr, "cudaHostRegister", [&] {
            if (settings().simulated) {
                return cudaSuccess;
            }
            return real != nullptr ? real(ptr, size, flags) : cudaErrorInitializationError;
        });
}

cudaError_t CUDARTAPI cudaHostUnregister(void* ptr) {
    static const auto real = runtime_function<decltype(&cudaHostUnregister)>("cudaHostUnregister");
    if (ptr != nullptr && !passing_through::active() && pytorch_allocates_here()) {
        runtime_free_outside(ptr, MEMTRAIL_OUTSIDE_PINNED_HOST, nullptr, "cudaHostUnregister");
    }
    if (settings().simulated) {
        return cudaSuccess;
    }
    const passing_through inside;
    return real != nullptr ? real(ptr) : cudaErrorInitializationError;
}

}  // extern "C"

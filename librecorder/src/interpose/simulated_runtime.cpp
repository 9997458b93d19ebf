// The runtime calls a program on the simulated device needs beyond allocation, answered over host
// memory: one device (0), streams that are handles only, copies and sets through the host memory
// behind each allocation (simulated_memory), errors kept per thread. Kernels cannot run: a launch
// reaches the real runtime, which reports that there is no device.

#include <cuda_runtime_api.h>

#include <atomic>
#include <cstdint>
#include <cstring>

#include "detail/interpose_settings.hpp"
#include "detail/real_symbols.hpp"
#include "detail/simulated_memory.hpp"
#include "detail/simulated_runtime.hpp"
#include "memtrail/memtrail.h"

namespace memtrail::interpose {

namespace {

thread_local cudaError_t last_error = cudaSuccess;

// Stream handles: distinct, never dereferenced, never 0 (the default stream).
std::atomic<uintptr_t> next_stream{1};

// The host bytes behind `pointer` for a copy of `length` bytes: device memory when `device`,
// else the host pointer itself.
void* bytes_at(const void* pointer, size_t length, bool device) {
    if (!device) {
        return const_cast<void*>(pointer);
    }
    return simulated_memory::get().host_address(reinterpret_cast<uint64_t>(pointer), length);
}

bool is_device_memory(const void* pointer) {
    return simulated_memory::get().host_address(reinterpret_cast<uint64_t>(pointer), 0) != nullptr;
}

}  // namespace

cudaError_t simulated_result(cudaError_t result) {
    if (result != cudaSuccess) {
        last_error = result;
    }
    return result;
}

namespace {

cudaError_t simulated_memset(void* device, int value, size_t count) {
    void* bytes = bytes_at(device, count, true);
    if (bytes == nullptr) {
        return simulated_result(cudaErrorInvalidValue);
    }
    std::memset(bytes, value, count);
    return cudaSuccess;
}

cudaError_t simulated_memcpy(void* dst, const void* src, size_t count, cudaMemcpyKind kind) {
    bool dst_on_device = kind == cudaMemcpyHostToDevice || kind == cudaMemcpyDeviceToDevice;
    bool src_on_device = kind == cudaMemcpyDeviceToHost || kind == cudaMemcpyDeviceToDevice;
    if (kind == cudaMemcpyDefault) {
        dst_on_device = is_device_memory(dst);
        src_on_device = is_device_memory(src);
    } else if (kind != cudaMemcpyHostToHost && !dst_on_device && !src_on_device) {
        return simulated_result(cudaErrorInvalidMemcpyDirection);
    }
    void* to = bytes_at(dst, count, dst_on_device);
    const void* from = bytes_at(src, count, src_on_device);
    if (to == nullptr || from == nullptr) {
        return simulated_result(cudaErrorInvalidValue);
    }
    std::memmove(to, from, count);
    return cudaSuccess;
}

}  // namespace

}  // namespace memtrail::interpose

using namespace memtrail::interpose;

// Each call answers on the simulated device and forwards, unchanged, to the real runtime otherwise.
#define MEMTRAIL_FORWARD(function, ...)                                                \
    do {                                                                               \
        if (!settings().simulated) {                                                   \
            static const auto real = runtime_function<decltype(&function)>(#function); \
            return real != nullptr ? real(__VA_ARGS__) : cudaErrorInitializationError; \
        }                                                                              \
    } while (false)

extern "C" {

cudaError_t CUDARTAPI cudaGetDeviceCount(int* count) {
    MEMTRAIL_FORWARD(cudaGetDeviceCount, count);
    if (count == nullptr) {
        return simulated_result(cudaErrorInvalidValue);
    }
    const int devices = memtrail_device_count();
    if (devices < 0) {
        return simulated_result(cudaErrorNoDevice);
    }
    *count = devices;
    return cudaSuccess;
}

cudaError_t CUDARTAPI cudaSetDevice(int device) {
    MEMTRAIL_FORWARD(cudaSetDevice, device);
    return device == 0 ? cudaSuccess : simulated_result(cudaErrorInvalidDevice);
}

cudaError_t CUDARTAPI cudaGetDevice(int* device) {
    MEMTRAIL_FORWARD(cudaGetDevice, device);
    if (device == nullptr) {
        return simulated_result(cudaErrorInvalidValue);
    }
    *device = 0;
    return cudaSuccess;
}

cudaError_t CUDARTAPI cudaDeviceSynchronize(void) {
    MEMTRAIL_FORWARD(cudaDeviceSynchronize);
    return cudaSuccess;
}

cudaError_t CUDARTAPI cudaStreamCreate(cudaStream_t* stream) {
    MEMTRAIL_FORWARD(cudaStreamCreate, stream);
    if (stream == nullptr) {
        return simulated_result(cudaErrorInvalidValue);
    }
    *stream = reinterpret_cast<cudaStream_t>(next_stream.fetch_add(1));
    return cudaSuccess;
}

cudaError_t CUDARTAPI cudaStreamDestroy(cudaStream_t stream) {
    MEMTRAIL_FORWARD(cudaStreamDestroy, stream);
    return stream != nullptr ? cudaSuccess : simulated_result(cudaErrorInvalidResourceHandle);
}

cudaError_t CUDARTAPI cudaStreamSynchronize(cudaStream_t stream) {
    MEMTRAIL_FORWARD(cudaStreamSynchronize, stream);
    return cudaSuccess;
}

cudaError_t CUDARTAPI cudaMemset(void* devPtr, int value, size_t count) {
    MEMTRAIL_FORWARD(cudaMemset, devPtr, value, count);
    return simulated_memset(devPtr, value, count);
}

// The simulated device has no queue: work on a stream is done when it is asked for.
cudaError_t CUDARTAPI cudaMemsetAsync(void* devPtr, int value, size_t count, cudaStream_t stream) {
    MEMTRAIL_FORWARD(cudaMemsetAsync, devPtr, value, count, stream);
    return simulated_memset(devPtr, value, count);
}

cudaError_t CUDARTAPI cudaMemcpy(void* dst, const void* src, size_t count, cudaMemcpyKind kind) {
    MEMTRAIL_FORWARD(cudaMemcpy, dst, src, count, kind);
    return simulated_memcpy(dst, src, count, kind);
}

cudaError_t CUDARTAPI cudaMemcpyAsync(void* dst, const void* src, size_t count, cudaMemcpyKind kind,
                                      cudaStream_t stream) {
    MEMTRAIL_FORWARD(cudaMemcpyAsync, dst, src, count, kind, stream);
    return simulated_memcpy(dst, src, count, kind);
}

cudaError_t CUDARTAPI cudaGetLastError(void) {
    MEMTRAIL_FORWARD(cudaGetLastError);
    const cudaError_t error = last_error;
    last_error = cudaSuccess;
    return error;
}

cudaError_t CUDARTAPI cudaPeekAtLastError(void) {
    MEMTRAIL_FORWARD(cudaPeekAtLastError);
    return last_error;
}

}  // extern "C"

// The driver's other ways to device, managed and pinned host memory, which memtrail's allocator
// never serves: they reach CUDA untouched, and are recorded as memory outside the allocator when
// PyTorch allocates through memtrail (NCCL's buffers come from cuMemCreate, pinned tensors from
// cuMemHostAlloc). driver_hooks.cpp hands them out through cuGetProcAddress and dlsym.

#include <cuda.h>

#include "detail/driver_outside.hpp"

using namespace memtrail::interpose;

extern "C" {

CUresult CUDAAPI cuMemAllocPitch_v2(CUdeviceptr* dptr, size_t* pPitch, size_t WidthInBytes,
                                    size_t Height, unsigned int ElementSizeBytes) {
    static const auto real = driver_function<decltype(&cuMemAllocPitch_v2)>("cuMemAllocPitch_v2");
    if (real == nullptr) {
        return CUDA_ERROR_NOT_INITIALIZED;
    }
    const auto call = [&] { return real(dptr, pPitch, WidthInBytes, Height, ElementSizeBytes); };
    if (!records_outside() || dptr == nullptr || pPitch == nullptr) {
        return call();
    }
    CUresult result = CUDA_SUCCESS;
    {
        const passing_through inside;
        result = call();
    }
    if (result == CUDA_SUCCESS) {
        outside_allocated(reinterpret_cast<void*>(*dptr), *pPitch * Height, MEMTRAIL_OUTSIDE_DEVICE,
                          current_device(), nullptr, "cuMemAllocPitch");
    }
    return result;
}

CUresult CUDAAPI cuMemAllocManaged(CUdeviceptr* dptr, size_t bytesize, unsigned int flags) {
    static const auto real = driver_function<decltype(&cuMemAllocManaged)>("cuMemAllocManaged");
    if (real == nullptr) {
        return CUDA_ERROR_NOT_INITIALIZED;
    }
    const auto call = [&] { return real(dptr, bytesize, flags); };
    if (!records_outside() || dptr == nullptr) {
        return call();
    }
    return allocate_outside(dptr, bytesize, MEMTRAIL_OUTSIDE_MANAGED, nullptr, "cuMemAllocManaged",
                            call);
}

CUresult CUDAAPI cuMemHostAlloc(void** pp, size_t bytesize, unsigned int Flags) {
    static const auto real = driver_function<decltype(&cuMemHostAlloc)>("cuMemHostAlloc");
    if (real == nullptr) {
        return CUDA_ERROR_NOT_INITIALIZED;
    }
    const auto call = [&] { return real(pp, bytesize, Flags); };
    if (!records_outside() || pp == nullptr) {
        return call();
    }
    return allocate_outside(pp, bytesize, MEMTRAIL_OUTSIDE_PINNED_HOST, nullptr, "cuMemHostAlloc",
                            call);
}

CUresult CUDAAPI cuMemAllocHost_v2(void** pp, size_t bytesize) {
    static const auto real = driver_function<decltype(&cuMemAllocHost_v2)>("cuMemAllocHost_v2");
    if (real == nullptr) {
        return CUDA_ERROR_NOT_INITIALIZED;
    }
    const auto call = [&] { return real(pp, bytesize); };
    if (!records_outside() || pp == nullptr) {
        return call();
    }
    return allocate_outside(pp, bytesize, MEMTRAIL_OUTSIDE_PINNED_HOST, nullptr, "cuMemAllocHost",
                            call);
}

CUresult CUDAAPI cuMemFreeHost(void* p) {
    static const auto real = driver_function<decltype(&cuMemFreeHost)>("cuMemFreeHost");
    if (real == nullptr) {
        return CUDA_ERROR_NOT_INITIALIZED;
    }
    const auto call = [&] { return real(p); };
    if (!records_outside() || p == nullptr) {
        return call();
    }
    return release_outside(p, MEMTRAIL_OUTSIDE_PINNED_HOST, nullptr, "cuMemFreeHost", call);
}

CUresult CUDAAPI cuMemHostRegister_v2(void* p, size_t bytesize, unsigned int Flags) {
    static const auto real =
        driver_function<decltype(&cuMemHostRegister_v2)>("cuMemHostRegister_v2");
    if (real == nullptr) {
        return CUDA_ERROR_NOT_INITIALIZED;
    }
    const auto call = [&] { return real(p, bytesize, Flags); };
    if (!records_outside() || p == nullptr) {
        return call();
    }
    void* registered = p;
    return allocate_outside(&registered, bytesize, MEMTRAIL_OUTSIDE_PINNED_HOST, nullptr,
                            "cuMemHostRegister", call);
}

CUresult CUDAAPI cuMemHostUnregister(void* p) {
    static const auto real = driver_function<decltype(&cuMemHostUnregister)>("cuMemHostUnregister");
    if (real == nullptr) {
        return CUDA_ERROR_NOT_INITIALIZED;
    }
    const auto call = [&] { return real(p); };
    if (!records_outside() || p == nullptr) {
        return call();
    }
    return release_outside(p, MEMTRAIL_OUTSIDE_PINNED_HOST, nullptr, "cuMemHostUnregister", call);
}

// Physical memory of the virtual memory API, recorded by its handle (what cuMemRelease names);
// mapping it (cuMemMap) takes no more memory.
CUresult CUDAAPI cuMemCreate(CUmemGenericAllocationHandle* handle, size_t size,
                             const CUmemAllocationProp* prop, unsigned long long flags) {
    static const auto real = driver_function<decltype(&cuMemCreate)>("cuMemCreate");
    if (real == nullptr) {
        return CUDA_ERROR_NOT_INITIALIZED;
    }
    const auto call = [&] { return real(handle, size, prop, flags); };
    if (!records_outside() || handle == nullptr || prop == nullptr) {
        return call();
    }
    CUresult result = CUDA_SUCCESS;
    {
        const passing_through inside;
        result = call();
    }
    if (result == CUDA_SUCCESS) {
        const bool on_device = prop->location.type == CU_MEM_LOCATION_TYPE_DEVICE;
        outside_allocated(reinterpret_cast<void*>(*handle), size,
                          on_device ? MEMTRAIL_OUTSIDE_DEVICE : MEMTRAIL_OUTSIDE_PINNED_HOST,
                          on_device ? prop->location.id : current_device(), nullptr, "cuMemCreate");
    }
    return result;
}

CUresult CUDAAPI cuMemRelease(CUmemGenericAllocationHandle handle) {
    static const auto real = driver_function<decltype(&cuMemRelease)>("cuMemRelease");
    if (real == nullptr) {
        return CUDA_ERROR_NOT_INITIALIZED;
    }
    const auto call = [&] { return real(handle); };
    if (!records_outside() || handle == 0) {
        return call();
    }
    // A handle is of one kind; the device kind is tried first, as nearly all are.
    void* key = reinterpret_cast<void*>(handle);
    if (memtrail_outside_free(key, MEMTRAIL_OUTSIDE_DEVICE, current_device(), nullptr) != 0) {
        memtrail_outside_free(key, MEMTRAIL_OUTSIDE_PINNED_HOST, current_device(), nullptr);
    }
    const passing_through inside;
    return call();
}

}  // extern "C"

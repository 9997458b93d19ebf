// The CUDA driver's device allocation calls. Programs reach them three ways, all taken here:
// - by name, linked against libcuda (LD_PRELOAD puts these definitions first);
// - through cuGetProcAddress, as every CUDA runtime does (nvcc's default static runtime inside the
//   program, libraries like cuBLAS with their own): it hands out the hooks below instead;
// - through dlsym on libcuda.so, as those runtimes find cuGetProcAddress itself.
// memtrail's own CUDA calls (librecorder's runtime) reach the driver untouched.

#include <cuda.h>
#include <dlfcn.h>

#include <cstring>

#include "detail/device_memory.hpp"
#include "detail/driver_outside.hpp"
#include "detail/interpose_settings.hpp"
#include "detail/real_symbols.hpp"

// The 4-argument cuGetProcAddress of CUDA 11.3 to 12: still exported by the driver.
#undef cuGetProcAddress
extern "C" CUresult CUDAAPI cuGetProcAddress(const char* symbol, void** pfn, int cudaVersion,
                                             cuuint64_t flags);

namespace memtrail::interpose {

namespace {

using alloc_function = CUresult (*)(CUdeviceptr*, size_t);
using free_function = CUresult (*)(CUdeviceptr);
using alloc_async_function = CUresult (*)(CUdeviceptr*, size_t, CUstream);
using free_async_function = CUresult (*)(CUdeviceptr, CUstream);
using get_proc_address_v2_function = CUresult (*)(const char*, void**, int, cuuint64_t,
                                                  CUdriverProcAddressQueryResult*);
using get_proc_address_function = CUresult (*)(const char*, void**, int, cuuint64_t);

CUresult to_driver_error(memory_result result) {
    switch (result) {
        case memory_result::ok:
            return CUDA_SUCCESS;
        case memory_result::out_of_memory:
            return CUDA_ERROR_OUT_OF_MEMORY;
        case memory_result::failed:
            return CUDA_ERROR_UNKNOWN;
    }
    return CUDA_ERROR_UNKNOWN;
}

template <typename Real>
MEMTRAIL_INLINE CUresult allocate(CUdeviceptr* pointer, size_t size, CUstream stream,
                                  const char* call, Real&& real) {
    if (pointer == nullptr) {
        return CUDA_ERROR_INVALID_VALUE;
    }
    if (passing_through::active()) {
        return real();  // CUDA's own call for an allocation a hook is passing through
    }
    if (pytorch_allocates_here()) {
        return allocate_outside(pointer, size, MEMTRAIL_OUTSIDE_DEVICE, stream, call, real);
    }
    const int device = current_device();
    if (settings().mode == interpose_mode::cache) {
        void* address = nullptr;
        const memory_result result = cache_allocate(&address, size, device, stream, call);
        *pointer = reinterpret_cast<CUdeviceptr>(address);
        return to_driver_error(result);
    }
    const CUresult result = real();
    if (result == CUDA_SUCCESS) {
        observe_allocated(reinterpret_cast<void*>(*pointer), size, device, stream, call);
    }
    return result;
}

template <typename Real>
MEMTRAIL_INLINE CUresult release(CUdeviceptr pointer, CUstream stream, const char* call,
                                 Real&& real) {
    void* address = reinterpret_cast<void*>(pointer);
    if (passing_through::active()) {
        return real();
    }
    if (pytorch_allocates_here() && pointer != 0) {
        return release_outside(address, MEMTRAIL_OUTSIDE_DEVICE, stream, call, real);
    }
    if (pointer != 0) {
        if (settings().mode == interpose_mode::cache) {
            if (cache_free(address, stream)) {
                return CUDA_SUCCESS;
            }
        } else {
            observe_freeing(address, current_device(), call);
        }
    }
    return real();
}

// The hooks of cuMemAllocAsync and cuMemFreeAsync, for their default-stream and per-thread
// default-stream (_ptsz) entry points alike.
MEMTRAIL_INLINE CUresult allocate_async(alloc_async_function real, CUdeviceptr* pointer,
                                        size_t size, CUstream stream) {
    if (real == nullptr) {
        return CUDA_ERROR_NOT_INITIALIZED;
    }
    return allocate(pointer, size, stream, "cuMemAllocAsync",
                    [&] { return real(pointer, size, stream); });
}

MEMTRAIL_INLINE CUresult free_async(free_async_function real, CUdeviceptr pointer,
                                    CUstream stream) {
    if (real == nullptr) {
        return CUDA_ERROR_NOT_INITIALIZED;
    }
    return release(pointer, stream, "cuMemFreeAsync", [&] { return real(pointer, stream); });
}

}  // namespace

}  // namespace memtrail::interpose

using namespace memtrail::interpose;

extern "C" {

CUresult CUDAAPI cuMemAlloc_v2(CUdeviceptr* dptr, size_t bytesize) {
    static const auto real = driver_function<alloc_function>("cuMemAlloc_v2");
    if (real == nullptr) {
        return CUDA_ERROR_NOT_INITIALIZED;
    }
    return allocate(dptr, bytesize, nullptr, "cuMemAlloc", [&] { return real(dptr, bytesize); });
}

CUresult CUDAAPI cuMemFree_v2(CUdeviceptr dptr) {
    static const auto real = driver_function<free_function>("cuMemFree_v2");
    if (real == nullptr) {
        return CUDA_ERROR_NOT_INITIALIZED;
    }
    return release(dptr, nullptr, "cuMemFree", [&] { return real(dptr); });
}

CUresult CUDAAPI cuMemAllocAsync(CUdeviceptr* dptr, size_t bytesize, CUstream hStream) {
    static const auto real = driver_function<alloc_async_function>("cuMemAllocAsync");
    return allocate_async(real, dptr, bytesize, hStream);
}

CUresult CUDAAPI cuMemAllocAsync_ptsz(CUdeviceptr* dptr, size_t bytesize, CUstream hStream) {
    static const auto real = driver_function<alloc_async_function>("cuMemAllocAsync_ptsz");
    return allocate_async(real, dptr, bytesize, hStream);
}

CUresult CUDAAPI cuMemFreeAsync(CUdeviceptr dptr, CUstream hStream) {
    static const auto real = driver_function<free_async_function>("cuMemFreeAsync");
    return free_async(real, dptr, hStream);
}

CUresult CUDAAPI cuMemFreeAsync_ptsz(CUdeviceptr dptr, CUstream hStream) {
    static const auto real = driver_function<free_async_function>("cuMemFreeAsync_ptsz");
    return free_async(real, dptr, hStream);
}

}  // extern "C"

namespace memtrail::interpose {

namespace {

void* hook_for_exported(const char* name);

// cuGetProcAddress's name of an outside-memory entry point (no "_v2": the version comes with the
// call) as exported: "cuMemAllocPitch" is cuMemAllocPitch_v2; others are their own name. Only
// the _v2 ABIs are hooked, as CUDA 3.2 and later hand them out.
const char* outside_symbol_name(const char* symbol, int cuda_version) {
    if (std::strcmp(symbol, "cuMemAllocPitch") == 0 && cuda_version >= 3020) {
        return "cuMemAllocPitch_v2";
    }
    if (std::strcmp(symbol, "cuMemAllocHost") == 0 && cuda_version >= 3020) {
        return "cuMemAllocHost_v2";
    }
    if (std::strcmp(symbol, "cuMemHostRegister") == 0 && cuda_version >= 6050) {
        return "cuMemHostRegister_v2";
    }
    static constexpr const char* same_name[] = {"cuMemAllocManaged", "cuMemHostAlloc",
                                                "cuMemFreeHost",     "cuMemHostUnregister",
                                                "cuMemCreate",       "cuMemRelease"};
    for (const char* name : same_name) {
        if (std::strcmp(symbol, name) == 0) {
            return name;
        }
    }
    return "";
}

// The hook standing in for the driver function cuGetProcAddress found for `symbol`, or nullptr
// for one memtrail leaves alone. cuMemAlloc and cuMemFree before CUDA 3.2 are the 32-bit ones.
void* hook_for(const char* symbol, int cuda_version, cuuint64_t flags) {
    const bool per_thread = (flags & CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM) != 0;
    if (std::strcmp(symbol, "cuMemAlloc") == 0 && cuda_version >= 3020) {
        return reinterpret_cast<void*>(&cuMemAlloc_v2);
    }
    if (std::strcmp(symbol, "cuMemFree") == 0 && cuda_version >= 3020) {
        return reinterpret_cast<void*>(&cuMemFree_v2);
    }
    if (std::strcmp(symbol, "cuMemAllocAsync") == 0) {
        return per_thread ? reinterpret_cast<void*>(&cuMemAllocAsync_ptsz)
                          : reinterpret_cast<void*>(&cuMemAllocAsync);
    }
    if (std::strcmp(symbol, "cuMemFreeAsync") == 0) {
        return per_thread ? reinterpret_cast<void*>(&cuMemFreeAsync_ptsz)
                          : reinterpret_cast<void*>(&cuMemFreeAsync);
    }
    if (void* hook = hook_for_exported(outside_symbol_name(symbol, cuda_version))) {
        return hook;
    }
    if (std::strcmp(symbol, "cuGetProcAddress") == 0) {
        return cuda_version >= 12000 ? reinterpret_cast<void*>(&cuGetProcAddress_v2)
                                     : reinterpret_cast<void*>(&cuGetProcAddress);
    }
    return nullptr;
}

// The hook for a symbol looked up by its exported name (dlsym), or nullptr.
void* hook_for_exported(const char* name) {
    static const struct {
        const char* name;
        void* hook;
    } hooks[] = {
        {"cuGetProcAddress", reinterpret_cast<void*>(&cuGetProcAddress)},
        {"cuGetProcAddress_v2", reinterpret_cast<void*>(&cuGetProcAddress_v2)},
        {"cuMemAlloc_v2", reinterpret_cast<void*>(&cuMemAlloc_v2)},
        {"cuMemFree_v2", reinterpret_cast<void*>(&cuMemFree_v2)},
        {"cuMemAllocAsync", reinterpret_cast<void*>(&cuMemAllocAsync)},
        {"cuMemFreeAsync", reinterpret_cast<void*>(&cuMemFreeAsync)},
        {"cuMemAllocAsync_ptsz", reinterpret_cast<void*>(&cuMemAllocAsync_ptsz)},
        {"cuMemFreeAsync_ptsz", reinterpret_cast<void*>(&cuMemFreeAsync_ptsz)},
        {"cuMemAllocPitch_v2", reinterpret_cast<void*>(&cuMemAllocPitch_v2)},
        {"cuMemAllocManaged", reinterpret_cast<void*>(&cuMemAllocManaged)},
        {"cuMemHostAlloc", reinterpret_cast<void*>(&cuMemHostAlloc)},
        {"cuMemAllocHost_v2", reinterpret_cast<void*>(&cuMemAllocHost_v2)},
        {"cuMemFreeHost", reinterpret_cast<void*>(&cuMemFreeHost)},
        {"cuMemHostRegister_v2", reinterpret_cast<void*>(&cuMemHostRegister_v2)},
        {"cuMemHostUnregister", reinterpret_cast<void*>(&cuMemHostUnregister)},
        {"cuMemCreate", reinterpret_cast<void*>(&cuMemCreate)},
        {"cuMemRelease", reinterpret_cast<void*>(&cuMemRelease)},
    };
    for (const auto& hook : hooks) {
        if (std::strcmp(name, hook.name) == 0) {
            return hook.hook;
        }
    }
    return nullptr;
}

}  // namespace

}  // namespace memtrail::interpose

extern "C" {

CUresult CUDAAPI cuGetProcAddress_v2(const char* symbol, void** pfn, int cudaVersion,
                                     cuuint64_t flags, CUdriverProcAddressQueryResult* status) {
    static const auto real = driver_function<get_proc_address_v2_function>("cuGetProcAddress_v2");
    if (real == nullptr) {
        return CUDA_ERROR_NOT_INITIALIZED;
    }
    const CUresult result = real(symbol, pfn, cudaVersion, flags, status);
    if (result == CUDA_SUCCESS && symbol != nullptr && pfn != nullptr && *pfn != nullptr) {
        if (void* hook = hook_for(symbol, cudaVersion, flags)) {
            *pfn = hook;
        }
    }
    return result;
}

CUresult CUDAAPI cuGetProcAddress(const char* symbol, void** pfn, int cudaVersion,
                                  cuuint64_t flags) {
    static const auto real = driver_function<get_proc_address_function>("cuGetProcAddress");
    if (real == nullptr) {
        return CUDA_ERROR_NOT_INITIALIZED;
    }
    const CUresult result = real(symbol, pfn, cudaVersion, flags);
    if (result == CUDA_SUCCESS && symbol != nullptr && pfn != nullptr && *pfn != nullptr) {
        if (void* hook = hook_for(symbol, cudaVersion, flags)) {
            *pfn = hook;
        }
    }
    return result;
}

// Lookups of the driver's allocation entry points by name, in libcuda (a CUDA runtime finding
// cuGetProcAddress), get the hooks; every other lookup, and memtrail's own, is glibc's.
void* dlsym(void* __restrict handle, const char* __restrict name) noexcept {
    void* found = real_dlsym(handle, name);
    if (found == nullptr || handle == RTLD_NEXT || is_memtrail_code(__builtin_return_address(0))) {
        return found;
    }
    if (void* hook = hook_for_exported(name); hook != nullptr && found != hook) {
        return hook;
    }
    return found;
}

}  // extern "C"

#pragma once
// What the driver's allocation hooks share (driver_hooks.cpp, driver_outside_hooks.cpp): the
// current device, and the pass-through of a call recorded as memory outside the allocator when
// PyTorch allocates through memtrail.

#include <cuda.h>

#include "device_memory.hpp"
#include "real_symbols.hpp"

namespace memtrail::interpose {

// The device of the calling thread's current context.
inline int current_device() {
    static const auto get_device = driver_function<CUresult (*)(CUdevice*)>("cuCtxGetDevice");
    CUdevice device = 0;
    if (get_device == nullptr || get_device(&device) != CUDA_SUCCESS) {
        return 0;
    }
    return static_cast<int>(device);
}

// Whether a hook records the call as memory outside the allocator: PyTorch allocates through
// memtrail here, and no hook is passing this call through already.
inline bool records_outside() {
    return !passing_through::active() && pytorch_allocates_here();
}

// PyTorch on memtrail: CUDA makes the allocation, memtrail records it as outside its allocator.
// `pointer` holds the result once CUDA has made it.
template <typename Pointer, typename Real>
MEMTRAIL_INLINE CUresult allocate_outside(Pointer* pointer, size_t size, int kind, CUstream stream,
                                          const char* call, Real&& real) {
    CUresult result = CUDA_SUCCESS;
    {
        const passing_through inside;
        result = real();
    }
    if (result == CUDA_SUCCESS) {
        // Real CUDA memory is never refused: only the simulated device can lack room.
        outside_allocated(reinterpret_cast<void*>(*pointer), size, kind, current_device(), stream,
                          call);
    }
    return result;
}

// Its free. A block memtrail's allocator served before PyTorch moved to memtrail (a library
// that allocated in cache mode first) goes back to memtrail, never to CUDA.
template <typename Real>
MEMTRAIL_INLINE CUresult release_outside(void* address, int kind, CUstream stream, const char* call,
                                         Real&& real) {
    if (memtrail_outside_free(address, kind, current_device(), stream) != 0) {
        if (memtrail_last_error_code() != MEMTRAIL_ERROR_UNKNOWN_POINTER) {
            report_failure(call);
        } else if (kind == MEMTRAIL_OUTSIDE_DEVICE && cache_free(address, stream)) {
            return CUDA_SUCCESS;
        }
    }
    const passing_through inside;
    return real();
}

}  // namespace memtrail::interpose

#include "memtrail/core/cuda_device.hpp"

#include <cuda.h>
#include <cuda_runtime_api.h>
#include <dlfcn.h>

#include <mutex>
#include <string>
#include <type_traits>

namespace memtrail {

namespace {

// The driver API is loaded at run time, so programs built with CUDA still start (and skip the
// CUDA device) on machines without a driver, like the CI machine.
struct driver_api {
    CUresult (*init)(unsigned int) = nullptr;
    CUresult (*get_error_name)(CUresult, const char**) = nullptr;
    CUresult (*get_granularity)(size_t*, const CUmemAllocationProp*,
                                CUmemAllocationGranularity_flags) = nullptr;
    CUresult (*address_reserve)(CUdeviceptr*, size_t, size_t, CUdeviceptr,
                                unsigned long long) = nullptr;
    CUresult (*address_free)(CUdeviceptr, size_t) = nullptr;
    CUresult (*create)(CUmemGenericAllocationHandle*, size_t, const CUmemAllocationProp*,
                       unsigned long long) = nullptr;
    CUresult (*release)(CUmemGenericAllocationHandle) = nullptr;
    CUresult (*map)(CUdeviceptr, size_t, size_t, CUmemGenericAllocationHandle,
                    unsigned long long) = nullptr;
    CUresult (*unmap)(CUdeviceptr, size_t) = nullptr;
    CUresult (*set_access)(CUdeviceptr, size_t, const CUmemAccessDesc*, size_t) = nullptr;
};

const driver_api& driver() {
    static driver_api api;
    static std::once_flag once;
    std::call_once(once, [] {
        void* lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
        if (!lib) {
            throw device_error(std::string("cannot load the CUDA driver (libcuda.so.1): ") +
                               dlerror());
        }
        auto load = [lib](auto& fn, const char* name) {
            fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(dlsym(lib, name));
            if (!fn) {
                throw device_error(std::string("the CUDA driver lacks ") + name);
            }
        };
        load(api.init, "cuInit");
        load(api.get_error_name, "cuGetErrorName");
        load(api.get_granularity, "cuMemGetAllocationGranularity");
        load(api.address_reserve, "cuMemAddressReserve");
        load(api.address_free, "cuMemAddressFree");
        load(api.create, "cuMemCreate");
        load(api.release, "cuMemRelease");
        load(api.map, "cuMemMap");
        load(api.unmap, "cuMemUnmap");
        load(api.set_access, "cuMemSetAccess");
    });
    return api;
}

// Every CUDA call goes through these: the error names the call, the file and the line.
#define MEMTRAIL_CUDA_CHECK(call) check_runtime((call), #call, __FILE__, __LINE__)
#define MEMTRAIL_CU_CHECK(call) check_driver((call), #call, __FILE__, __LINE__)

void check_runtime(cudaError_t status, const char* call, const char* file, int line) {
    if (status != cudaSuccess) {
        throw device_error(std::string("CUDA error ") + cudaGetErrorName(status) + " (" +
                           cudaGetErrorString(status) + ") in " + call + " at " + file + ":" +
                           std::to_string(line));
    }
}

void check_driver(CUresult status, const char* call, const char* file, int line) {
    if (status != CUDA_SUCCESS) {
        const char* name = "unknown";
        driver().get_error_name(status, &name);
        throw device_error(std::string("CUDA driver error ") + name + " in " + call + " at " +
                           file + ":" + std::to_string(line));
    }
}

// The allocator may be called from any thread: make `index` current for the call.
class device_guard {
  public:
    explicit device_guard(int index) {
        MEMTRAIL_CUDA_CHECK(cudaGetDevice(&previous_));
        if (previous_ != index) {
            MEMTRAIL_CUDA_CHECK(cudaSetDevice(index));
        }
        index_ = index;
    }
    ~device_guard() {
        if (previous_ != index_) {
            cudaSetDevice(previous_);
        }
    }
    device_guard(const device_guard&) = delete;
    device_guard& operator=(const device_guard&) = delete;

  private:
    int previous_ = 0;
    int index_ = 0;
};

// Device memory may be asked for while a stream is capturing a CUDA graph (an allocation made
// during the capture). In the default (global) capture mode the capture forbids cudaMalloc and
// the VMM calls from any thread, and the attempt invalidates it; relaxed mode, for this thread
// and this call only, allows them, as PyTorch's cudaMallocMaybeCapturing does. Never used for
// frees: the allocator gives nothing back while a capture may be under way.
class relaxed_capture_mode {
  public:
    relaxed_capture_mode() { cudaThreadExchangeStreamCaptureMode(&mode_); }
    ~relaxed_capture_mode() { cudaThreadExchangeStreamCaptureMode(&mode_); }
    relaxed_capture_mode(const relaxed_capture_mode&) = delete;
    relaxed_capture_mode& operator=(const relaxed_capture_mode&) = delete;

  private:
    cudaStreamCaptureMode mode_ = cudaStreamCaptureModeRelaxed;  // swapped in, then back
};

CUmemAllocationProp pinned_on(int index) {
    CUmemAllocationProp prop = {};
    prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
    prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    prop.location.id = index;
    return prop;
}

template <typename T>
T from_handle(uint64_t h) {
    return reinterpret_cast<T>(static_cast<uintptr_t>(h));
}
template <typename T>
uint64_t to_handle(T p) {
    return static_cast<uint64_t>(reinterpret_cast<uintptr_t>(p));
}

}  // namespace

int cuda_device::count() {
    int n = 0;
    if (cudaGetDeviceCount(&n) != cudaSuccess) {
        cudaGetLastError();
        return 0;
    }
    return n;
}

cuda_device::cuda_device(int index) : index_(index) {
    const int n = count();
    if (index < 0 || index >= n) {
        throw device_error("CUDA device " + std::to_string(index) + " does not exist (" +
                           std::to_string(n) + " visible)");
    }
    MEMTRAIL_CU_CHECK(driver().init(0));
}

std::string cuda_device::name() const {
    cudaDeviceProp prop{};
    MEMTRAIL_CUDA_CHECK(cudaGetDeviceProperties(&prop, index_));
    return prop.name;
}

device_status cuda_device::allocate(uint64_t size, device_address& out) {
    device_guard guard(index_);
    void* ptr = nullptr;
    cudaError_t status;
    {
        relaxed_capture_mode relaxed;
        status = cudaMalloc(&ptr, size);
    }
    if (status == cudaErrorMemoryAllocation) {
        cudaGetLastError();  // clear the sticky-free error so later calls are not affected
        return device_status::out_of_memory;
    }
    MEMTRAIL_CUDA_CHECK(status);
    out = to_handle(ptr);
    return device_status::ok;
}

void cuda_device::free(device_address address) {
    device_guard guard(index_);
    MEMTRAIL_CUDA_CHECK(cudaFree(from_handle<void*>(address)));
}

memory_info cuda_device::get_memory_info() {
    device_guard guard(index_);
    size_t free = 0, total = 0;
    MEMTRAIL_CUDA_CHECK(cudaMemGetInfo(&free, &total));
    return {free, total};
}

event_handle cuda_device::create_event() {
    device_guard guard(index_);
    cudaEvent_t event = nullptr;
    MEMTRAIL_CUDA_CHECK(cudaEventCreateWithFlags(&event, cudaEventDisableTiming));
    return to_handle(event);
}

void cuda_device::destroy_event(event_handle event) {
    device_guard guard(index_);
    MEMTRAIL_CUDA_CHECK(cudaEventDestroy(from_handle<cudaEvent_t>(event)));
}

void cuda_device::record_event(event_handle event, stream_handle stream) {
    device_guard guard(index_);
    MEMTRAIL_CUDA_CHECK(
        cudaEventRecord(from_handle<cudaEvent_t>(event), from_handle<cudaStream_t>(stream)));
}

bool cuda_device::query_event(event_handle event) {
    const cudaError_t status = cudaEventQuery(from_handle<cudaEvent_t>(event));
    if (status == cudaErrorNotReady) {
        cudaGetLastError();
        return false;
    }
    MEMTRAIL_CUDA_CHECK(status);
    return true;
}

void cuda_device::synchronize_event(event_handle event) {
    MEMTRAIL_CUDA_CHECK(cudaEventSynchronize(from_handle<cudaEvent_t>(event)));
}

void cuda_device::synchronize_stream(stream_handle stream) {
    device_guard guard(index_);
    MEMTRAIL_CUDA_CHECK(cudaStreamSynchronize(from_handle<cudaStream_t>(stream)));
}

void cuda_device::synchronize_device() {
    device_guard guard(index_);
    MEMTRAIL_CUDA_CHECK(cudaDeviceSynchronize());
}

uint64_t cuda_device::stream_capture_id(stream_handle stream) {
    if (stream == 0) {
        return 0;  // the legacy default stream cannot capture, and is not asked
    }
    cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
    unsigned long long id = 0;
    // A failed query means "not capturing"; the error is not sticky, but is cleared so that the
    // caller's next cudaGetLastError does not see it.
    if (cudaStreamGetCaptureInfo(from_handle<cudaStream_t>(stream), &status, &id) != cudaSuccess) {
        cudaGetLastError();
        return 0;
    }
    return status == cudaStreamCaptureStatusNone ? 0 : id;
}

uint64_t cuda_device::allocation_granularity() {
    const CUmemAllocationProp prop = pinned_on(index_);
    size_t granularity = 0;
    MEMTRAIL_CU_CHECK(
        driver().get_granularity(&granularity, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM));
    return granularity;
}

device_status cuda_device::reserve_address_range(uint64_t size, device_address& out) {
    CUdeviceptr ptr = 0;
    relaxed_capture_mode relaxed;
    const CUresult status = driver().address_reserve(&ptr, size, 0, 0, 0);
    if (status == CUDA_ERROR_OUT_OF_MEMORY) {
        return device_status::out_of_memory;
    }
    MEMTRAIL_CU_CHECK(status);
    out = ptr;
    return device_status::ok;
}

void cuda_device::release_address_range(device_address address, uint64_t size) {
    MEMTRAIL_CU_CHECK(driver().address_free(address, size));
}

device_status cuda_device::create_physical(uint64_t size, physical_handle& out) {
    const CUmemAllocationProp prop = pinned_on(index_);
    CUmemGenericAllocationHandle handle = 0;
    relaxed_capture_mode relaxed;
    const CUresult status = driver().create(&handle, size, &prop, 0);
    if (status == CUDA_ERROR_OUT_OF_MEMORY) {
        return device_status::out_of_memory;
    }
    MEMTRAIL_CU_CHECK(status);
    out = handle;
    return device_status::ok;
}

void cuda_device::release_physical(physical_handle handle) {
    MEMTRAIL_CU_CHECK(driver().release(handle));
}

void cuda_device::map(device_address address, uint64_t size, physical_handle handle) {
    relaxed_capture_mode relaxed;
    MEMTRAIL_CU_CHECK(driver().map(address, size, 0, handle, 0));
}

void cuda_device::unmap(device_address address, uint64_t size) {
    MEMTRAIL_CU_CHECK(driver().unmap(address, size));
}

void cuda_device::set_access(device_address address, uint64_t size) {
    CUmemAccessDesc desc = {};
    desc.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    desc.location.id = index_;
    desc.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
    relaxed_capture_mode relaxed;
    MEMTRAIL_CU_CHECK(driver().set_access(address, size, &desc, 1));
}

}  // namespace memtrail

#include "detail/process_memory.hpp"

#include <dlfcn.h>
#include <unistd.h>

#include <mutex>
#include <vector>

#ifdef MEMTRAIL_HAVE_CUDA
#include <cuda_runtime_api.h>
#endif

namespace memtrail::recorder::librecorder {

namespace {

// NVML's ABI, as nvml.h declares it (not every build machine has the header).
using nvml_return = int;
using nvml_device = void*;
constexpr nvml_return nvml_success = 0;
constexpr nvml_return nvml_insufficient_size = 7;
constexpr unsigned long long nvml_value_not_available = ~0ull;

// nvmlProcessInfo_v2_t: what nvmlDeviceGetComputeRunningProcesses_v2 and _v3 fill.
struct nvml_process_info {
    unsigned int pid;
    unsigned long long used_gpu_memory;
    unsigned int gpu_instance_id;
    unsigned int compute_instance_id;
};

struct nvml_api {
    nvml_return (*init)() = nullptr;
    nvml_return (*by_pci_bus_id)(const char*, nvml_device*) = nullptr;
    nvml_return (*processes)(nvml_device, unsigned int*, nvml_process_info*) = nullptr;
    std::string missing;  // why NVML cannot be used, "" when it can
};

const nvml_api& nvml() {
    static nvml_api api;
    static std::once_flag once;
    std::call_once(once, [] {
        void* library = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
        if (library == nullptr) {
            api.missing = "NVML (libnvidia-ml.so.1) is not available to tell them apart";
            return;
        }
        api.init = reinterpret_cast<decltype(api.init)>(dlsym(library, "nvmlInit_v2"));
        api.by_pci_bus_id = reinterpret_cast<decltype(api.by_pci_bus_id)>(
            dlsym(library, "nvmlDeviceGetHandleByPciBusId_v2"));
        void* processes = dlsym(library, "nvmlDeviceGetComputeRunningProcesses_v3");
        if (processes == nullptr) {
            processes = dlsym(library, "nvmlDeviceGetComputeRunningProcesses_v2");
        }
        api.processes = reinterpret_cast<decltype(api.processes)>(processes);
        if (api.init == nullptr || api.by_pci_bus_id == nullptr || api.processes == nullptr) {
            api.missing = "this NVML lacks the calls needed to tell them apart";
        } else if (api.init() != nvml_success) {
            api.missing = "NVML did not start (nvmlInit) to tell them apart";
        }
    });
    return api;
}

}  // namespace

std::optional<uint64_t> nvml_process_memory(int device, std::string& why_not) {
#ifdef MEMTRAIL_HAVE_CUDA
    const nvml_api& api = nvml();
    if (!api.missing.empty()) {
        why_not = api.missing;
        return std::nullopt;
    }
    char bus_id[32] = {};
    nvml_device handle = nullptr;
    if (cudaDeviceGetPCIBusId(bus_id, sizeof bus_id, device) != cudaSuccess ||
        api.by_pci_bus_id(bus_id, &handle) != nvml_success) {
        why_not = "NVML does not know device " + std::to_string(device);
        return std::nullopt;
    }
    std::vector<nvml_process_info> processes(16);
    for (;;) {
        auto count = static_cast<unsigned int>(processes.size());
        const nvml_return status = api.processes(handle, &count, processes.data());
        if (status == nvml_insufficient_size) {
            processes.resize(count + 16);
            continue;
        }
        if (status != nvml_success) {
            why_not =
                "NVML did not list the device's processes (error " + std::to_string(status) + ")";
            return std::nullopt;
        }
        processes.resize(count);
        break;
    }
    // This process uses the device, so NVML lists it: under its own pid, or under the host's
    // when this is a container's pid namespace. Then, when it is the only one, it is this one.
    const auto me = static_cast<unsigned int>(getpid());
    const nvml_process_info* mine = nullptr;
    for (const nvml_process_info& process : processes) {
        if (process.pid == me) {
            mine = &process;
        }
    }
    if (mine == nullptr && processes.size() == 1) {
        mine = &processes.front();
    }
    if (mine == nullptr) {
        why_not = "NVML lists " + std::to_string(processes.size()) +
                  " processes on the device and not this one (pid " + std::to_string(me) +
                  "): its pids are another pid namespace's, as in a container";
        return std::nullopt;
    }
    if (mine->used_gpu_memory == nvml_value_not_available) {
        why_not = "NVML does not report this process's memory (MIG or a virtual machine)";
        return std::nullopt;
    }
    return mine->used_gpu_memory;
#else
    (void)device;
    why_not = "this librecorder was built without CUDA";
    return std::nullopt;
#endif
}

}  // namespace memtrail::recorder::librecorder

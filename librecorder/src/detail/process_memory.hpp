#pragma once
// This process's own use of a CUDA device, as the driver's management library (NVML) reports it,
// to tell its CUDA context from other processes' memory. NVML is loaded at run time where present
// (libnvidia-ml.so.1 comes with the driver); nothing is linked.

#include <cstdint>
#include <optional>
#include <string>

namespace memtrail::recorder::librecorder {

// The bytes NVML counts for this process on CUDA device `device` (the runtime's numbering), or
// nullopt with the reason in `why_not`: NVML missing, the device not found, the process not
// among those NVML lists (its pids are another pid namespace's, as in a container, and other
// processes share the device: alone on it, it is the one listed), or its usage not reported
// (MIG, some virtual machines).
std::optional<uint64_t> nvml_process_memory(int device, std::string& why_not);

}  // namespace memtrail::recorder::librecorder

#pragma once
// Every byte of a device accounted for: the snapshot's accounting rows (memtrail run on a
// PyTorch process) read for people. The device's used memory is the allocator's reserved bytes,
// the allocations made outside it by library, the CUDA context and other processes.

#include <cstdint>
#include <string>
#include <vector>

#include "memtrail/snapshot/model.hpp"

namespace memtrail::analysis {

// The row of `device` for the out-of-memory recorded at `time_ns`: the first "oom" row at or
// after it; nullptr when the snapshot has none (a PyTorch pickle, or a native program).
const snapshot::memory_accounting* accounting_for_oom(const snapshot::snapshot& s, int device,
                                                      int64_t time_ns);
// The latest row of `device` (the snapshot's own, when it was taken by memtrail run); nullptr
// when there is none.
const snapshot::memory_accounting* latest_accounting(const snapshot::snapshot& s, int device);

// "NCCL 688MiB, cuBLAS 128MiB, context 512MiB, other processes 0": who holds the device's
// memory outside the allocator. Where this process's context cannot be told from other
// processes, "context and other processes 512MiB (NVML ...: why)".
std::string outside_split_text(const snapshot::memory_accounting& a);

// The check that the parts add up: device_used - (reserved + outside + context + other), as a
// signed number of bytes (0 when every byte is accounted for).
int64_t unaccounted_bytes(const snapshot::memory_accounting& a);

// Live pinned host memory of the process at the snapshot, by library, the most first.
std::vector<snapshot::library_bytes> pinned_host_by_library(const snapshot::snapshot& s);

}  // namespace memtrail::analysis

#pragma once
// The JSON written next to each recorded parity trace (shared/tools/torch_parity_traces.py):
// the configuration, the per-process memory fraction, the device's total memory and
// torch.cuda.memory_stats() at the end.

#include <cstdint>
#include <filesystem>
#include <map>
#include <string>

namespace memtrail::replay {

struct trace_metadata {
    std::string conf;       // PYTORCH_CUDA_ALLOC_CONF, "" when the default was used
    double fraction = 0.0;  // 0: no per-process fraction
    uint64_t device_total = 0;
    std::map<std::string, int64_t> stats;
};

// Reads such a file, or a plain {"name": number, ...} object of statistics. Throws
// std::runtime_error naming the file and the byte offset of a syntax error.
trace_metadata read_trace_metadata(const std::filesystem::path& path);

}  // namespace memtrail::replay

#include "memtrail/analysis/stream_names.hpp"

namespace memtrail::analysis {

stream_names::stream_names(const snapshot::snapshot& source, int device) {
    if (const snapshot::device_trace* trace = source.find_trace(device)) {
        for (const auto& e : trace->entries) {
            number(e.stream);
        }
    }
    for (const auto& seg : source.segments) {
        if (seg.device == device) {
            number(seg.stream);
        }
    }
}

size_t stream_names::number(uint64_t handle) const {
    if (handle == 0) {
        return 0;
    }
    return numbers_.try_emplace(handle, numbers_.size() + 1).first->second;
}

std::string stream_names::name(uint64_t handle) const {
    return "stream " + std::to_string(number(handle));
}

std::string stream_names::name_with_handle(uint64_t handle) const {
    return name(handle) + " (" + std::to_string(handle) + ")";
}

}  // namespace memtrail::analysis

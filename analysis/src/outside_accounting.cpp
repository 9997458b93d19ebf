#include "memtrail/analysis/outside_accounting.hpp"

#include <algorithm>
#include <map>

#include "memtrail/analysis/size_text.hpp"

namespace memtrail::analysis {

const snapshot::memory_accounting* accounting_for_oom(const snapshot::snapshot& s, int device,
                                                      int64_t time_ns) {
    for (const auto& row : s.outside.accounting) {
        if (row.moment == "oom" && row.device == device && row.time_ns >= time_ns) {
            return &row;
        }
    }
    return nullptr;
}

const snapshot::memory_accounting* latest_accounting(const snapshot::snapshot& s, int device) {
    const snapshot::memory_accounting* latest = nullptr;
    for (const auto& row : s.outside.accounting) {
        if (row.device == device && (latest == nullptr || row.time_ns >= latest->time_ns)) {
            latest = &row;
        }
    }
    return latest;
}

std::string outside_split_text(const snapshot::memory_accounting& a) {
    std::string text;
    for (const auto& [library, bytes] : a.outside_by_library) {
        text += library + " " + format_bytes(bytes) + ", ";
    }
    if (a.unsplit.empty()) {
        text += "context " + format_bytes(a.context) + ", other processes " +
                format_bytes(a.other_processes);
    } else {
        text += "context and other processes " + format_bytes(a.context) + " (" + a.unsplit + ")";
    }
    return text;
}

int64_t unaccounted_bytes(const snapshot::memory_accounting& a) {
    return static_cast<int64_t>(a.device_used) -
           static_cast<int64_t>(a.allocator_reserved + a.outside() + a.context + a.other_processes);
}

std::vector<snapshot::library_bytes> pinned_host_by_library(const snapshot::snapshot& s) {
    std::map<std::string, uint64_t> bytes;
    for (const auto& e : s.outside.live) {
        if (e.kind == snapshot::outside_kind::pinned_host) {
            bytes[std::string(s.string_at(e.library))] += e.size;
        }
    }
    std::vector<snapshot::library_bytes> out(bytes.begin(), bytes.end());
    std::stable_sort(out.begin(), out.end(),
                     [](const auto& x, const auto& y) { return x.second > y.second; });
    return out;
}

}  // namespace memtrail::analysis

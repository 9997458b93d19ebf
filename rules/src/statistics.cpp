// memory_stats() names and the memory_summary() table, laid out exactly as PyTorch prints them.

#include "memtrail/rules/statistics.hpp"

#include <cstdio>
#include <iomanip>
#include <sstream>
#include <vector>

namespace memtrail {

namespace {

struct named_array {
    const char* name;
    const stat_array device_stats::*member;
};

constexpr named_array stat_arrays[] = {
    {"allocation", &device_stats::allocation},
    {"segment", &device_stats::segment},
    {"active", &device_stats::active},
    {"inactive_split", &device_stats::inactive_split},
    {"allocated_bytes", &device_stats::allocated_bytes},
    {"reserved_bytes", &device_stats::reserved_bytes},
    {"active_bytes", &device_stats::active_bytes},
    {"inactive_split_bytes", &device_stats::inactive_split_bytes},
    {"requested_bytes", &device_stats::requested_bytes},
};

constexpr const char* pool_names[] = {"all", "small_pool", "large_pool"};

void put_stat(std::map<std::string, int64_t>& out, const std::string& prefix, const stat& s) {
    out[prefix + ".current"] = s.current;
    out[prefix + ".peak"] = s.peak;
    out[prefix + ".allocated"] = s.allocated;
    out[prefix + ".freed"] = s.freed;
}

// PyTorch's _format_size: the unit is chosen by the reference value (the "all" row).
std::string format_size_cell(int64_t size, int64_t reference) {
    static const char* units[] = {"B  ", "KiB", "MiB", "GiB", "TiB", "PiB"};
    double ref = static_cast<double>(reference);
    int unit = 0;
    for (int next = 1; next < 6; ++next) {
        if (ref < 768 * 1024) {
            break;
        }
        unit = next;
        size = size >= 0 ? size / 1024 : -((-size + 1023) / 1024);  // Python's floor division
        ref /= 1024;
    }
    char cell[32];
    std::snprintf(cell, sizeof cell, "%6lld %s", static_cast<long long>(size), units[unit]);
    return cell;
}

std::string format_count_cell(int64_t count, int64_t reference) {
    static const char* units[] = {" ", "K", "M"};
    double ref = static_cast<double>(reference);
    int unit = 0;
    for (int next = 1; next < 3; ++next) {
        if (ref < 750 * 1000) {
            break;
        }
        unit = next;
        count = count >= 0 ? count / 1000 : -((-count + 999) / 1000);
        ref /= 1000;
    }
    char cell[32];
    std::snprintf(cell, sizeof cell, "%7lld %s ", static_cast<long long>(count), units[unit]);
    return cell;
}

std::string pad_right(const std::string& s, size_t width) {
    return s.size() >= width ? s : s + std::string(width - s.size(), ' ');
}

}  // namespace

std::map<std::string, int64_t> to_memory_stats(const device_stats& stats) {
    std::map<std::string, int64_t> out;
    for (const auto& array : stat_arrays) {
        for (size_t pool = 0; pool < stat_type_count; ++pool) {
            put_stat(out, std::string(array.name) + "." + pool_names[pool],
                     (stats.*array.member)[pool]);
        }
    }
    put_stat(out, "oversize_allocations", stats.oversize_allocations);
    put_stat(out, "oversize_segments", stats.oversize_segments);
    out["num_alloc_retries"] = stats.num_alloc_retries;
    out["num_ooms"] = stats.num_ooms;
    out["num_sync_all_streams"] = stats.num_sync_all_streams;
    out["num_device_alloc"] = stats.num_device_alloc;
    out["num_device_free"] = stats.num_device_free;
    out["max_split_size"] = stats.max_split_size;
    return out;
}

std::string format_memory_summary(const device_stats& stats, int device, bool abbreviated) {
    struct metric {
        const char* label;
        const stat_array device_stats::*member;
        bool is_size;
    };
    static const metric metrics[] = {
        {"Allocated memory", &device_stats::allocated_bytes, true},
        {"Active memory", &device_stats::active_bytes, true},
        {"Requested memory", &device_stats::requested_bytes, true},
        {"GPU reserved memory", &device_stats::reserved_bytes, true},
        {"Non-releasable memory", &device_stats::inactive_split_bytes, true},
        {"Allocations", &device_stats::allocation, false},
        {"Active allocs", &device_stats::active, false},
        {"GPU reserved segments", &device_stats::segment, false},
        {"Non-releasable allocs", &device_stats::inactive_split, false},
    };
    std::vector<std::string> lines;
    const std::string rule(75, '=');
    const std::string thin(75, '-');
    char buffer[128];
    lines.push_back(rule);
    std::snprintf(buffer, sizeof buffer, " %16s PyTorch CUDA memory summary, device ID %-17d ", "",
                  device);
    lines.push_back(buffer);
    lines.push_back(thin);
    std::snprintf(buffer, sizeof buffer,
                  "  %9s CUDA OOMs: %-12lld | %6s cudaMalloc retries: %-8lld  ", "",
                  static_cast<long long>(stats.num_ooms), "",
                  static_cast<long long>(stats.num_alloc_retries));
    lines.push_back(buffer);
    lines.push_back(rule);
    lines.push_back("        Metric         | Cur Usage  | Peak Usage | Tot Alloc  | Tot Freed  ");
    auto row = [&](const std::string& label, const stat& s, const stat& reference, bool is_size) {
        auto cell = [&](int64_t v, int64_t ref) {
            return is_size ? format_size_cell(v, ref) : format_count_cell(v, ref);
        };
        lines.push_back(" " + pad_right(label, 21) + " | " + cell(s.current, reference.current) +
                        " | " + cell(s.peak, reference.peak) + " | " +
                        cell(s.allocated, reference.allocated) + " | " +
                        cell(s.freed, reference.freed) + " ");
    };
    for (const auto& m : metrics) {
        lines.push_back(thin);
        const stat_array& array = stats.*m.member;
        row(m.label, array[0], array[0], m.is_size);
        if (!abbreviated) {
            row("      from large pool", array[2], array[0], m.is_size);
            row("      from small pool", array[1], array[0], m.is_size);
        }
    }
    lines.push_back(thin);
    row("Oversize allocations", stats.oversize_allocations, stats.oversize_allocations, false);
    lines.push_back(thin);
    row("Oversize GPU segments", stats.oversize_segments, stats.oversize_segments, false);
    lines.push_back(rule);
    std::string out;
    for (const auto& line : lines) {
        out += "|" + line + "|\n";
    }
    return out;
}

std::string format_size(uint64_t bytes) {
    std::ostringstream os;
    os << std::fixed << std::setprecision(2);
    if (bytes <= 1024) {
        os.str("");
        os << bytes << " bytes";
    } else if (bytes <= 1048576) {
        os << static_cast<double>(bytes) / 1024.0 << " KiB";
    } else if (bytes <= 1073741824ull) {
        os << static_cast<double>(bytes) / 1048576.0 << " MiB";
    } else {
        os << static_cast<double>(bytes) / 1073741824.0 << " GiB";
    }
    return os.str();
}

}  // namespace memtrail

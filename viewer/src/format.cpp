#include "detail/format.hpp"

#include <cinttypes>
#include <cstdio>
#include <cstdlib>

namespace memtrail::viewer {

std::string format_count(uint64_t count) {
    std::string digits = std::to_string(count);
    std::string out;
    out.reserve(digits.size() + digits.size() / 3);
    for (size_t i = 0; i < digits.size(); ++i) {
        if (i > 0 && (digits.size() - i) % 3 == 0) {
            out.push_back(',');
        }
        out.push_back(digits[i]);
    }
    return out;
}

std::string position_label(size_t position) {
    return position == 0 ? "start" : "entry " + std::to_string(position - 1);
}

std::string format_duration(int64_t ns) {
    char text[48];
    const double magnitude = std::abs(static_cast<double>(ns));
    if (magnitude < 1e3) {
        std::snprintf(text, sizeof text, "%" PRId64 " ns", ns);
    } else if (magnitude < 1e6) {
        std::snprintf(text, sizeof text, "%.3g us", static_cast<double>(ns) / 1e3);
    } else if (magnitude < 1e9) {
        std::snprintf(text, sizeof text, "%.3g ms", static_cast<double>(ns) / 1e6);
    } else if (magnitude < 60e9) {
        std::snprintf(text, sizeof text, "%.3g s", static_cast<double>(ns) / 1e9);
    } else {
        const int64_t seconds = ns / 1000000000;
        std::snprintf(text, sizeof text, "%" PRId64 " min %02" PRId64 " s", seconds / 60,
                      std::abs(seconds % 60));
    }
    return text;
}

std::string format_address(uint64_t address) {
    char text[24];
    std::snprintf(text, sizeof text, "0x%" PRIx64, address);
    return text;
}

double nice_step(double raw, double base) {
    if (raw <= 0) {
        return 1;
    }
    double unit = 1;
    while (unit * base <= raw) {
        unit *= base;
    }
    for (const double m : {1.0, 2.0, 5.0, 10.0, 20.0, 50.0, 100.0, 200.0, 500.0}) {
        if (unit * m >= raw) {
            return unit * m;
        }
    }
    return unit * base;
}

std::string format_entry_context(const snapshot::snapshot& source, const snapshot::trace_entry& e) {
    std::string text;
    const std::string_view compile_context = source.string_at(e.compile_context);
    if (!compile_context.empty() && compile_context != "N/A") {
        text = "compile " + std::string(compile_context);
    }
    const std::string_view metadata = source.string_at(e.user_metadata);
    if (!metadata.empty()) {
        text += (text.empty() ? "" : ", ") + std::string(metadata);
    }
    return text;
}

}  // namespace memtrail::viewer

#include "memtrail/analysis/size_text.hpp"

#include <array>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdio>

namespace memtrail::analysis {
namespace {

struct unit {
    std::string_view name;
    double factor;
};

constexpr std::array<unit, 9> units = {{
    {"b", 1.0},
    {"kib", 1024.0},
    {"mib", 1024.0 * 1024},
    {"gib", 1024.0 * 1024 * 1024},
    {"tib", 1024.0 * 1024 * 1024 * 1024},
    {"kb", 1e3},
    {"mb", 1e6},
    {"gb", 1e9},
    {"tb", 1e12},
}};

}  // namespace

std::string format_bytes(uint64_t bytes) {
    static constexpr std::array<std::string_view, 5> names = {"B", "KiB", "MiB", "GiB", "TiB"};
    size_t index = 0;
    double value = static_cast<double>(bytes);
    while (value >= 1024.0 && index + 1 < names.size()) {
        value /= 1024.0;
        ++index;
    }
    if (index == 0) {
        return std::to_string(bytes) + "B";
    }
    char text[32];
    std::snprintf(text, sizeof text, "%.2f", value);
    std::string number(text);
    while (number.back() == '0') {
        number.pop_back();
    }
    if (number.back() == '.') {
        number.pop_back();
    }
    return number + std::string(names[index]);
}

std::string format_bytes_delta(int64_t bytes) {
    if (bytes == 0) {
        return "0B";
    }
    const uint64_t magnitude =
        bytes < 0 ? static_cast<uint64_t>(-(bytes + 1)) + 1 : static_cast<uint64_t>(bytes);
    return (bytes < 0 ? "-" : "+") + format_bytes(magnitude);
}

std::optional<uint64_t> parse_bytes(std::string_view text) {
    while (!text.empty() && std::isspace(static_cast<unsigned char>(text.front()))) {
        text.remove_prefix(1);
    }
    while (!text.empty() && std::isspace(static_cast<unsigned char>(text.back()))) {
        text.remove_suffix(1);
    }
    size_t number_end = 0;
    while (
        number_end < text.size() &&
        (std::isdigit(static_cast<unsigned char>(text[number_end])) || text[number_end] == '.')) {
        ++number_end;
    }
    const std::string_view number = text.substr(0, number_end);
    std::string_view suffix = text.substr(number_end);
    while (!suffix.empty() && suffix.front() == ' ') {
        suffix.remove_prefix(1);
    }
    if (number.empty() || number == ".") {
        return std::nullopt;
    }
    if (suffix.empty() && number.find('.') == std::string_view::npos) {
        uint64_t value = 0;
        const auto [end, error] =
            std::from_chars(number.data(), number.data() + number.size(), value);
        if (error != std::errc() || end != number.data() + number.size()) {
            return std::nullopt;
        }
        return value;
    }
    double value = 0.0;
    const auto [end, error] = std::from_chars(number.data(), number.data() + number.size(), value);
    if (error != std::errc() || end != number.data() + number.size()) {
        return std::nullopt;
    }
    double factor = 1.0;
    if (!suffix.empty()) {
        std::string lower;
        for (const char c : suffix) {
            lower += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
        }
        bool known = false;
        for (const unit& u : units) {
            if (lower == u.name) {
                factor = u.factor;
                known = true;
            }
        }
        if (!known) {
            return std::nullopt;
        }
    }
    const double bytes = std::floor(value * factor);
    if (!(bytes >= 0.0) || bytes >= 18446744073709551615.0) {
        return std::nullopt;
    }
    return static_cast<uint64_t>(bytes);
}

}  // namespace memtrail::analysis

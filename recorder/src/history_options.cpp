#include "memtrail/recorder/history_options.hpp"

#include <algorithm>
#include <array>

namespace memtrail::recorder {

namespace {

// Indexed by the enums' values.
constexpr std::array<std::string_view, 3> record_mode_names = {"off", "state", "all"};
constexpr std::array<std::string_view, 4> context_mode_names = {"none", "state", "alloc", "all"};
constexpr std::array<std::string_view, 3> stack_source_names = {"native", "python", "all"};

template <typename Enum, size_t count>
bool parse_name(const std::array<std::string_view, count>& names, std::string_view name,
                Enum& out) {
    const auto it = std::find(names.begin(), names.end(), name);
    if (it == names.end()) {
        return false;
    }
    out = static_cast<Enum>(it - names.begin());
    return true;
}

}  // namespace

std::string_view record_mode_name(record_mode mode) {
    return record_mode_names.at(static_cast<size_t>(mode));
}

bool parse_record_mode(std::string_view name, record_mode& out) {
    return parse_name(record_mode_names, name, out);
}

std::string_view context_mode_name(context_mode mode) {
    return context_mode_names.at(static_cast<size_t>(mode));
}

bool parse_context_mode(std::string_view name, context_mode& out) {
    return parse_name(context_mode_names, name, out);
}

std::string_view stack_source_name(stack_source source) {
    return stack_source_names.at(static_cast<size_t>(source));
}

bool parse_stack_source(std::string_view name, stack_source& out) {
    return parse_name(stack_source_names, name, out);
}

}  // namespace memtrail::recorder

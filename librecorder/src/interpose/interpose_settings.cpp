#include "interpose_settings.hpp"

#include <array>
#include <cstdlib>
#include <stdexcept>
#include <string_view>

namespace memtrail::interpose {

namespace {

struct interpose_option {
    std::string_view name;
    std::string_view default_value;
    std::string_view meaning;
};

// clang-format off
constexpr std::array<interpose_option, 3> options = {{
    {"MEMTRAIL_MODE",      "cache", "cache: serve device allocations from memtrail's allocator; observe: pass them to CUDA and record them"},
    {"MEMTRAIL_EXIT_DUMP", "",      "path pattern (%p pid, %t time): snapshot written when the program exits"},
    {"MEMTRAIL_DEVICE",    "cuda",  "librecorder's device; on sim[:capacity] the interposer answers the CUDA runtime itself"},
}};
// clang-format on

std::string value_of(std::string_view name) {
    for (const interpose_option& option : options) {
        if (option.name == name) {
            const char* value = std::getenv(std::string(name).c_str());
            return value != nullptr ? value : std::string(option.default_value);
        }
    }
    throw std::logic_error("memtrail: environment variable " + std::string(name) +
                           " is missing from the interposer's table");
}

interpose_settings read_settings() {
    interpose_settings read;
    const std::string mode = value_of("MEMTRAIL_MODE");
    if (mode == "observe") {
        read.mode = interpose_mode::observe;
    } else if (mode != "cache") {
        throw std::invalid_argument("memtrail: MEMTRAIL_MODE=\"" + mode +
                                    "\" is not valid; expected cache or observe");
    }
    // librecorder validates the rest of the value at its first call.
    const std::string device = value_of("MEMTRAIL_DEVICE");
    read.simulated = device == "sim" || device.starts_with("sim:");
    read.exit_dump_pattern = value_of("MEMTRAIL_EXIT_DUMP");
    return read;
}

}  // namespace

const interpose_settings& settings() {
    static const interpose_settings parsed = read_settings();
    return parsed;
}

}  // namespace memtrail::interpose

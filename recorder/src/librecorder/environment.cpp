#include "librecorder/environment.hpp"

#include <array>
#include <cerrno>
#include <charconv>
#include <csignal>
#include <cstdlib>
#include <stdexcept>
#include <string>

namespace memtrail::recorder::librecorder {

namespace {

// clang-format off
constexpr std::array<environment_option, 9> options = {{
    {"MEMTRAIL_DEVICE",       "cuda",      "the device: cuda, or sim[:capacity] for a simulated one (sim:80GiB)"},
    {"MEMTRAIL_RECORD",       "off",       "record history from the start: off, state or all (context all)"},
    {"MEMTRAIL_STACKS",       "native",    "stacks recorded with MEMTRAIL_RECORD: native, python (frames of threads running Python code) or all"},
    {"MEMTRAIL_MAX_ENTRIES",  "1000000",   "trace entries kept per device; older ones are dropped and counted"},
    {"MEMTRAIL_UNWINDER",     "libunwind", "native stack unwinder: libunwind, or frame_pointer for -fno-omit-frame-pointer builds"},
    {"MEMTRAIL_ALLOC_CONF",   "",          "allocator settings in PYTORCH_CUDA_ALLOC_CONF syntax"},
    {"MEMTRAIL_OOM_DUMP",     "",          "path pattern (%p pid, %d device, %t time): snapshot written on every out-of-memory"},
    {"MEMTRAIL_SIGNAL_DUMP",  "",          "path pattern: snapshot written when MEMTRAIL_DUMP_SIGNAL arrives"},
    {"MEMTRAIL_DUMP_SIGNAL",  "SIGUSR1",   "the signal that triggers MEMTRAIL_SIGNAL_DUMP: SIGUSR1, SIGUSR2 or a number"},
}};
// clang-format on

std::string value_of(std::string_view name) {
    for (const environment_option& option : options) {
        if (option.name == name) {
            const char* value = std::getenv(std::string(name).c_str());
            return value != nullptr ? value : std::string(option.default_value);
        }
    }
    throw std::logic_error("memtrail: environment variable " + std::string(name) +
                           " is missing from the table");
}

[[noreturn]] void reject(std::string_view name, std::string_view value, std::string_view accepted) {
    throw std::invalid_argument("memtrail: " + std::string(name) + "=\"" + std::string(value) +
                                "\" is not valid; expected " + std::string(accepted));
}

int parse_signal(std::string_view text) {
    if (text == "SIGUSR1" || text == "USR1") {
        return SIGUSR1;
    }
    if (text == "SIGUSR2" || text == "USR2") {
        return SIGUSR2;
    }
    int number = 0;
    const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), number);
    if (error != std::errc() || end != text.data() + text.size() || number <= 0 || number >= NSIG) {
        reject("MEMTRAIL_DUMP_SIGNAL", text, "SIGUSR1, SIGUSR2 or a signal number");
    }
    return number;
}

}  // namespace

uint64_t parse_byte_size(std::string_view text) {
    struct unit {
        std::string_view suffix;
        double bytes;
    };
    // Longest suffixes first, so that "GiB" is not read as "B".
    constexpr std::array<unit, 9> units = {{{"KiB", 0x1p10},
                                            {"MiB", 0x1p20},
                                            {"GiB", 0x1p30},
                                            {"TiB", 0x1p40},
                                            {"KB", 1e3},
                                            {"MB", 1e6},
                                            {"GB", 1e9},
                                            {"TB", 1e12},
                                            {"B", 1}}};
    double scale = 1;
    std::string_view number = text;
    for (const unit& u : units) {
        if (number.size() > u.suffix.size() && number.ends_with(u.suffix)) {
            number.remove_suffix(u.suffix.size());
            scale = u.bytes;
            break;
        }
    }
    double value = 0;
    const auto [end, error] = std::from_chars(number.data(), number.data() + number.size(), value);
    if (error != std::errc() || end != number.data() + number.size() || value <= 0 ||
        value * scale >= 0x1p64) {
        throw std::invalid_argument("memtrail: \"" + std::string(text) +
                                    "\" is not a size (examples: 80GiB, 512MiB, 4096)");
    }
    return static_cast<uint64_t>(value * scale);
}

environment_settings read_environment() {
    environment_settings settings;

    const std::string device = value_of("MEMTRAIL_DEVICE");
    if (device == "sim" || device.starts_with("sim:")) {
        settings.simulated_device = true;
        if (device.size() > 4) {
            try {
                settings.simulated_capacity = parse_byte_size(std::string_view(device).substr(4));
            } catch (const std::invalid_argument&) {
                reject("MEMTRAIL_DEVICE", device, "cuda or sim[:capacity], e.g. sim:80GiB");
            }
        }
    } else if (device != "cuda") {
        reject("MEMTRAIL_DEVICE", device, "cuda or sim[:capacity], e.g. sim:80GiB");
    }

    const std::string record = value_of("MEMTRAIL_RECORD");
    if (!parse_record_mode(record, settings.history.enabled)) {
        reject("MEMTRAIL_RECORD", record, "off, state or all");
    }
    settings.history.context =
        settings.history.enabled == record_mode::off ? context_mode::none : context_mode::all;

    const std::string stacks = value_of("MEMTRAIL_STACKS");
    if (!parse_stack_source(stacks, settings.history.stacks)) {
        reject("MEMTRAIL_STACKS", stacks, "native, python or all");
    }

    const std::string entries = value_of("MEMTRAIL_MAX_ENTRIES");
    size_t max_entries = 0;
    const auto [end, error] =
        std::from_chars(entries.data(), entries.data() + entries.size(), max_entries);
    if (error != std::errc() || end != entries.data() + entries.size()) {
        reject("MEMTRAIL_MAX_ENTRIES", entries, "a number of entries");
    }
    settings.history.max_entries = max_entries;

    const std::string unwind = value_of("MEMTRAIL_UNWINDER");
    if (!parse_unwinder(unwind, settings.history.stack_unwinder)) {
        reject("MEMTRAIL_UNWINDER", unwind, "libunwind or frame_pointer");
    }

    settings.oom_dump_pattern = value_of("MEMTRAIL_OOM_DUMP");
    settings.signal_dump_pattern = value_of("MEMTRAIL_SIGNAL_DUMP");
    settings.dump_signal = parse_signal(value_of("MEMTRAIL_DUMP_SIGNAL"));
    return settings;
}

}  // namespace memtrail::recorder::librecorder

#pragma once
// librecorder's switches: every environment variable it reads, in one table, parsed in one place.

#include <cstdint>
#include <string>
#include <string_view>

#include "memtrail/recorder/history_options.hpp"

namespace memtrail::recorder::librecorder {

struct environment_option {
    std::string_view name;
    std::string_view default_value;
    std::string_view meaning;
};

struct environment_settings {
    bool simulated_device = false;  // MEMTRAIL_DEVICE=sim[:capacity]
    uint64_t simulated_capacity = 80ull << 30;
    history_options history;          // MEMTRAIL_RECORD, MEMTRAIL_STACKS, ...
    std::string oom_dump_pattern;     // MEMTRAIL_OOM_DUMP
    std::string signal_dump_pattern;  // MEMTRAIL_SIGNAL_DUMP
    int dump_signal = 0;              // MEMTRAIL_DUMP_SIGNAL
};

/// Reads every variable of the table (MEMTRAIL_ALLOC_CONF is read by
/// allocator_config::from_environment()).
/// @throws std::invalid_argument naming the variable, its value and what it accepts.
environment_settings read_environment();

// "80GiB", "512MiB", "1.5GB", "4096": bytes, with binary (KiB, MiB, GiB, TiB) or decimal
// (KB, MB, GB, TB) units. Throws std::invalid_argument.
uint64_t parse_byte_size(std::string_view text);

}  // namespace memtrail::recorder::librecorder

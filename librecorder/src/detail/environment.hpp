#pragma once
// librecorder's switches: every environment variable it reads, in one table (environment.cpp),
// parsed in one place. docs/recorder.md, recorder/README.md and memtrail.h list the same
// variables (tests/recorder/environment_test.cpp compares them with the table).

#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "memtrail/core/allocator_config.hpp"
#include "memtrail/recorder/history_options.hpp"

namespace memtrail::recorder::librecorder {

struct environment_settings {
    bool simulated_device = false;  // MEMTRAIL_DEVICE=sim[:capacity]
    uint64_t simulated_capacity = 80ull << 30;
    uint64_t fail_nth_allocation = 0;  // MEMTRAIL_SIM_FAIL_NTH; 0 = none
    double failure_rate = 0.0;         // MEMTRAIL_SIM_FAIL_RATE
    uint64_t failure_seed = 1;
    history_options history;          // MEMTRAIL_RECORD, MEMTRAIL_STACKS, ...
    allocator_config allocator;       // MEMTRAIL_ALLOC_CONF
    std::string oom_dump_pattern;     // MEMTRAIL_OOM_DUMP
    std::string signal_dump_pattern;  // MEMTRAIL_SIGNAL_DUMP
    int dump_signal = 0;              // MEMTRAIL_DUMP_SIGNAL
    bool live = true;                 // MEMTRAIL_LIVE: the attach endpoint (docs/live.md)
};

// One row of the table, as mimalloc keeps its options.
struct environment_option {
    std::string_view name;
    std::string_view default_value;  // what an unset variable means
    std::string_view accepted;       // what an error says is accepted
    // Parses a value (the default included) into its member(s) of environment_settings;
    // throws std::invalid_argument when the value is not accepted.
    void (*parse)(const environment_option& option, std::string_view value,
                  environment_settings& settings);
};

// Every variable librecorder reads, in the order docs/recorder.md lists them.
std::span<const environment_option> environment_options();

/// Reads every variable of the table.
/// @throws std::invalid_argument naming the variable, its value and what it accepts.
environment_settings read_environment();

// "80GiB", "512MiB", "1.5GB", "4096": bytes (at least 1), with binary (KiB, MiB, GiB, TiB) or
// decimal (KB, MB, GB, TB) units. Throws std::invalid_argument.
uint64_t parse_byte_size(std::string_view text);

}  // namespace memtrail::recorder::librecorder

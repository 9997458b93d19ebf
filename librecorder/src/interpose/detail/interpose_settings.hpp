#pragma once
// What libmemtrail_interpose.so is asked to do (by `memtrail run`), taken from the settings table
// (librecorder/environment.cpp, docs/settings.md): it reads no variable itself. It looks only at
// MEMTRAIL_MODE, MEMTRAIL_EXIT_DUMP and MEMTRAIL_DEVICE's kind, to answer the runtime itself on
// "sim"; the rest is librecorder's.

#include <string>

#include "detail/environment.hpp"

namespace memtrail::interpose {

using recorder::librecorder::interpose_mode;

struct interpose_settings {
    interpose_mode mode = interpose_mode::cache;
    bool simulated = false;         // MEMTRAIL_DEVICE=sim[:capacity]: no GPU, answered here
    std::string exit_dump_pattern;  // MEMTRAIL_EXIT_DUMP: snapshot written at exit, "" = none
    recorder::librecorder::job_identity job;  // for the pattern's %r, %l and %j
};

/// The settings, read at the first call.
/// @throws std::invalid_argument naming the variable, its value and what it accepts.
const interpose_settings& settings();

}  // namespace memtrail::interpose

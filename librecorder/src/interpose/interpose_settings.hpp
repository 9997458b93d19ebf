#pragma once
// What libmemtrail_interpose.so is asked to do, read once from its environment variables (set by
// `memtrail run`): every variable it reads, in one table, parsed in one place. The device, the
// recording and the allocator settings are librecorder's variables (docs/recorder.md); the
// interposer only looks at MEMTRAIL_DEVICE's kind, to answer the runtime itself on "sim".

#include <string>

namespace memtrail::interpose {

enum class interpose_mode {
    cache,    // device allocations come from memtrail's caching allocator
    observe,  // device allocations go to CUDA as before, and are recorded
};

struct interpose_settings {
    interpose_mode mode = interpose_mode::cache;
    bool simulated = false;         // MEMTRAIL_DEVICE=sim[:capacity]: no GPU, answered here
    std::string exit_dump_pattern;  // MEMTRAIL_EXIT_DUMP: snapshot written at exit, "" = none
};

/// The settings, parsed at the first call.
/// @throws std::invalid_argument naming the variable, its value and what it accepts.
const interpose_settings& settings();

}  // namespace memtrail::interpose

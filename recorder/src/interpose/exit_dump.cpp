// The snapshot written when the program exits (MEMTRAIL_EXIT_DUMP), and the check of the
// interposer's settings before the program's main: a bad setting stops the program at once, with
// the reason, rather than leaving it running unrecorded.

#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>

#include "device_memory.hpp"
#include "interpose_settings.hpp"
#include "memtrail/memtrail.h"

namespace memtrail::interpose {

namespace {

std::atomic<bool> exit_dump_due{true};

// The pattern with %p replaced by the process id (%% by %).
std::string expand_pid(const std::string& pattern) {
    std::string path;
    for (size_t i = 0; i < pattern.size(); ++i) {
        if (pattern[i] == '%' && i + 1 < pattern.size() &&
            (pattern[i + 1] == 'p' || pattern[i + 1] == '%')) {
            path += pattern[i + 1] == 'p' ? std::to_string(getpid()) : "%";
            ++i;
        } else {
            path += pattern[i];
        }
    }
    return path;
}

bool write_exit_snapshot() {
    const std::string path = expand_pid(settings().exit_dump_pattern);
    if (memtrail_dump_snapshot(path.c_str()) != 0) {
        std::fprintf(stderr, "memtrail: cannot write the snapshot at exit: %s\n",
                     memtrail_last_error());
        return false;
    }
    return true;
}

// A process that never reached memtrail (a shell, a launcher) leaves no snapshot behind.
void dump_at_exit() {
    if (reached_memtrail() && exit_dump_due.exchange(false)) {
        write_exit_snapshot();
    }
}

// Checks the settings before the program's main (the exit snapshot is armed at the first
// allocation, see arm_exit_dump).
[[gnu::constructor]] void start() {
    try {
        settings();
    } catch (const std::exception& error) {
        std::fprintf(stderr, "%s\n", error.what());
        _exit(2);
    }
}

}  // namespace

// atexit handlers run newest first: registered after the program's first allocation has started
// the CUDA runtimes (the program's and librecorder's), this one runs before they unload, while
// the device can still be asked about.
void arm_exit_dump() {
    if (!settings().exit_dump_pattern.empty()) {
        std::atexit(dump_at_exit);
    }
}

}  // namespace memtrail::interpose

extern "C" {

// Writes the exit snapshot now, and not again at exit: Python calls it from its own exit
// handlers, while the interpreter can still name its frames (sitecustomize.py). Written when the
// process reached memtrail, or `pytorch_on_memtrail` (PyTorch allocates through librecorder).
[[gnu::visibility("default")]] int memtrail_interpose_exit_dump(int pytorch_on_memtrail) {
    using namespace memtrail::interpose;
    if (settings().exit_dump_pattern.empty() || !(pytorch_on_memtrail != 0 || reached_memtrail()) ||
        !exit_dump_due.exchange(false)) {
        return 0;
    }
    return write_exit_snapshot() ? 0 : -1;
}

}  // extern "C"

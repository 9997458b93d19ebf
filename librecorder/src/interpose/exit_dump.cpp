// The snapshot written when the program exits (MEMTRAIL_EXIT_DUMP): from exit()'s handlers, from
// _exit()/_Exit() (os._exit, a program that skips its handlers), and on SIGTERM (Slurm,
// Kubernetes, `timeout`), after which the signal ends the program as it would have. Also the
// check of the interposer's settings before the program's main: a bad setting stops the program
// at once, with the reason, rather than leaving it running unrecorded.

#include <dlfcn.h>
#include <pthread.h>
#include <semaphore.h>
#include <signal.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>
#include <thread>

#include "detail/device_memory.hpp"
#include "detail/interpose_settings.hpp"
#include "detail/real_symbols.hpp"
#include "memtrail/memtrail.h"
#include "memtrail/recorder/dump_triggers.hpp"

namespace memtrail::interpose {

namespace {

std::atomic<bool> exit_dump_due{true};
// PyTorch allocates through librecorder (sitecustomize.py said so): its process has a snapshot
// to write although no CUDA call of its reached the interposer. A forked child has not.
std::atomic<bool> pytorch_on_memtrail{false};
std::atomic<pid_t> pytorch_process{0};
std::atomic<bool> termination_dump_installed{false};

bool write_exit_snapshot() {
    const auto now = std::chrono::system_clock::now().time_since_epoch();
    const std::string path = recorder::expand_dump_path(
        recorder::librecorder::expand_job_placeholders(settings().exit_dump_pattern,
                                                       settings().job),
        -1, std::chrono::duration_cast<std::chrono::nanoseconds>(now).count());
    if (memtrail_dump_snapshot(path.c_str()) != 0) {
        std::fprintf(stderr, "memtrail: cannot write the snapshot at exit: %s\n",
                     memtrail_last_error());
        return false;
    }
    return true;
}

// getpid() tells a vfork child (subprocess's, calling _exit when exec fails) from its parent: it
// runs no fork handlers and must not write its parent's snapshot from its parent's memory. A
// PyTorch process writes one only once PyTorch has allocated: torchrun's launcher imports torch
// (and so gets memtrail as its allocator) but allocates nothing.
bool has_a_snapshot_to_write() {
    if (settings().exit_dump_pattern.empty()) {
        return false;
    }
    const pid_t me = getpid();
    return (reached_memtrail() && process_that_reached() == me) ||
           (pytorch_on_memtrail.load() && pytorch_process.load() == me &&
            memtrail_has_allocated() != 0);
}

// A process that never reached memtrail (a shell, a launcher, a child forked from a recording
// process that exits before allocating) leaves no snapshot behind.
void dump_at_exit() {
    if (has_a_snapshot_to_write() && exit_dump_due.exchange(false)) {
        write_exit_snapshot();
    }
}

// SIGTERM: the handler wakes a thread (sem_post is async-signal-safe), which writes the snapshot
// with the locks, files and allocations a handler cannot use, then ends the process by the
// signal's own default action, so its parent sees it killed by SIGTERM as before.
sem_t termination_wake;

void on_termination(int) {
    const int saved_errno = errno;
    sem_post(&termination_wake);
    errno = saved_errno;
}

void end_by_termination() {
    while (sem_wait(&termination_wake) != 0) {
    }
    dump_at_exit();
    signal(SIGTERM, SIG_DFL);
    raise(SIGTERM);
}

// A forked child is a process of its own, and has no thread to serve the SIGTERM handler:
// SIGTERM ends it as it would have.
void on_forked_child() {
    note_forked_child();
    pytorch_on_memtrail.store(false);
    if (termination_dump_installed.load()) {
        signal(SIGTERM, SIG_DFL);
    }
}

// Once per process that records, and only where SIGTERM would end the program unhandled: a
// program with a handler of its own exits its own way, through exit()'s handlers.
void arm_termination_dump() {
    static std::atomic<bool> armed{false};
    if (armed.exchange(true)) {
        return;
    }
    struct sigaction current {};
    if (sigaction(SIGTERM, nullptr, &current) != 0 || (current.sa_flags & SA_SIGINFO) != 0 ||
        current.sa_handler != SIG_DFL || sem_init(&termination_wake, 0, 0) != 0) {
        return;
    }
    std::thread(end_by_termination).detach();
    termination_dump_installed.store(true);
    struct sigaction action {};
    action.sa_handler = on_termination;
    sigemptyset(&action.sa_mask);
    action.sa_flags = SA_RESTART;
    sigaction(SIGTERM, &action, nullptr);
}

// glibc's _exit and _Exit, found once at load: a vfork child (which shares its parent's memory
// and locks) may call ours, and must not be the one to look them up.
using exit_function = void (*)(int);
exit_function real_exit = nullptr;
exit_function real_capital_exit = nullptr;

[[noreturn]] void exit_now(exit_function real, int status) {
    dump_at_exit();
    if (real != nullptr) {
        real(status);
    }
    syscall(SYS_exit_group, status);
    __builtin_unreachable();
}

// Checks the settings before the program's main (the exit snapshot is armed at the first
// allocation, see arm_exit_dump).
[[gnu::constructor]] void start() {
    real_exit = reinterpret_cast<exit_function>(real_dlsym(RTLD_NEXT, "_exit"));
    real_capital_exit = reinterpret_cast<exit_function>(real_dlsym(RTLD_NEXT, "_Exit"));
    try {
        settings();
    } catch (const std::exception& error) {
        std::fprintf(stderr, "%s\n", error.what());
        std::fflush(stderr);
        syscall(SYS_exit_group, 2);  // not our _exit: there are no settings to write a snapshot by
    }
    pthread_atfork(nullptr, nullptr, on_forked_child);
}

}  // namespace

// atexit handlers run newest first: registered after the program's first allocation has started
// the CUDA runtimes (the program's and librecorder's), this one runs before they unload, while
// the device can still be asked about.
void arm_exit_dump() {
    if (!settings().exit_dump_pattern.empty()) {
        std::atexit(dump_at_exit);
        arm_termination_dump();
    }
}

void exit_dump_due_again() {
    exit_dump_due.store(true);
}

bool pytorch_allocates_here() {
    return pytorch_on_memtrail.load(std::memory_order_relaxed) &&
           pytorch_process.load(std::memory_order_relaxed) == getpid();
}

}  // namespace memtrail::interpose

extern "C" {

// Writes the exit snapshot now, and not again at exit: Python calls it from its own exit
// handlers, while the interpreter can still name its frames (sitecustomize.py). Written when the
// process reached memtrail, or `pytorch_on_memtrail` (PyTorch allocates through librecorder).
[[gnu::visibility("default")]] int memtrail_interpose_exit_dump(int pytorch_allocates_here) {
    using namespace memtrail::interpose;
    if (pytorch_allocates_here != 0) {
        pytorch_process.store(getpid());
        pytorch_on_memtrail.store(true);
    }
    if (!has_a_snapshot_to_write() || !exit_dump_due.exchange(false)) {
        return 0;
    }
    return write_exit_snapshot() ? 0 : -1;
}

// sitecustomize.py, once PyTorch allocates through librecorder: this process has a snapshot to
// write at exit, on _exit and on SIGTERM, and every allocation the hooks see from now on is
// another library's (device_memory.hpp).
[[gnu::visibility("default")]] void memtrail_interpose_pytorch_on_memtrail() {
    using namespace memtrail::interpose;
    pytorch_process.store(getpid());
    pytorch_on_memtrail.store(true);
    // Every other allocation is recorded as outside memory from now on: the device's used memory
    // can be divided among them.
    memtrail_account_outside_memory();
    if (!settings().exit_dump_pattern.empty()) {
        arm_termination_dump();
    }
}

// _exit and _Exit skip exit()'s handlers (Python's os._exit, a program that ends in a hurry):
// the snapshot is written first. glibc's exit() reaches its own _exit directly, not these.
[[gnu::visibility("default")]] void _exit(int status) {
    memtrail::interpose::exit_now(memtrail::interpose::real_exit, status);
}

[[gnu::visibility("default")]] void _Exit(int status) {
    memtrail::interpose::exit_now(memtrail::interpose::real_capital_exit, status);
}

}  // extern "C"

// A sampling profiler for machines without perf (the GPU hosts): preload it and name a file,
//
//     LD_PRELOAD=libmemtrail_stack_sampler.so MEMTRAIL_SAMPLES=out.folded program ...
//
// Every millisecond of the process's CPU time (ITIMER_PROF) the thread that used it is
// interrupted and its stack walked with libunwind from the interrupted registers. At exit the
// stacks are written in the folded format of flame graphs ("outer;...;leaf count" a line), each
// frame as its symbol where the dynamic symbol table has one, else "module@0xoffset", which
// bench/support/fold_samples.py resolves against unstripped copies of the modules.
// MEMTRAIL_SAMPLES_PERIOD_US changes the period; MEMTRAIL_SAMPLES_AFTER_S leaves out the first
// seconds of CPU time (a program's imports). A development tool: it is not installed.

#define UNW_LOCAL_ONLY
#include <cxxabi.h>
#include <dlfcn.h>
#include <libunwind.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <string>
#include <unordered_map>
#include <vector>

namespace {

constexpr size_t frames_per_sample = 96;
constexpr size_t sample_capacity = 1 << 16;

struct sample {
    uint32_t count;
    uintptr_t frames[frames_per_sample];  // leaf first
};

sample* samples = nullptr;  // mapped once: the handler cannot allocate
std::atomic<size_t> taken{0};
std::atomic<bool> sampling{false};
const char* output_path = nullptr;
pid_t sampled_process = 0;  // a forked child inherits the exit handlers, not the timer

void on_profile_signal(int, siginfo_t*, void* context) {
    if (!sampling.load(std::memory_order_relaxed)) {
        return;
    }
    const size_t index = taken.fetch_add(1, std::memory_order_relaxed);
    if (index >= sample_capacity) {
        return;
    }
    const int saved_errno = errno;
    sample& s = samples[index];
    unw_cursor_t cursor;
    uint32_t count = 0;
    if (unw_init_local2(&cursor, static_cast<unw_context_t*>(context), UNW_INIT_SIGNAL_FRAME) ==
        0) {
        do {
            unw_word_t ip = 0;
            if (unw_get_reg(&cursor, UNW_REG_IP, &ip) != 0 || ip == 0) {
                break;
            }
            // Callers' addresses are return addresses: one back lies in the call.
            s.frames[count] = count == 0 ? ip : ip - 1;
            ++count;
        } while (count < frames_per_sample && unw_step(&cursor) > 0);
    }
    s.count = count;
    errno = saved_errno;
}

std::string frame_name(uintptr_t address, std::unordered_map<uintptr_t, std::string>& names) {
    const auto found = names.find(address);
    if (found != names.end()) {
        return found->second;
    }
    std::string name;
    Dl_info info{};
    if (dladdr(reinterpret_cast<void*>(address), &info) != 0 && info.dli_fname != nullptr) {
        if (info.dli_sname != nullptr) {
            int status = 0;
            char* demangled = abi::__cxa_demangle(info.dli_sname, nullptr, nullptr, &status);
            name = status == 0 ? demangled : info.dli_sname;
            std::free(demangled);
            // Template arguments make names long and the folded format's separators unsafe.
            name.erase(std::remove(name.begin(), name.end(), ';'), name.end());
        } else {
            const char* slash = std::strrchr(info.dli_fname, '/');
            char offset[32];
            std::snprintf(
                offset, sizeof offset, "@0x%lx",
                static_cast<unsigned long>(address - reinterpret_cast<uintptr_t>(info.dli_fbase)));
            name = std::string(slash != nullptr ? slash + 1 : info.dli_fname) + offset;
        }
    } else {
        char raw[32];
        std::snprintf(raw, sizeof raw, "?@0x%lx", static_cast<unsigned long>(address));
        name = raw;
    }
    std::replace(name.begin(), name.end(), ' ', '_');
    names.emplace(address, name);
    return name;
}

void write_samples() {
    if (getpid() != sampled_process || !sampling.exchange(false)) {
        return;
    }
    itimerval off{};
    setitimer(ITIMER_PROF, &off, nullptr);
    const size_t count = std::min(taken.load(), sample_capacity);
    std::unordered_map<uintptr_t, std::string> names;
    std::map<std::string, size_t> folded;
    for (size_t i = 0; i < count; ++i) {
        const sample& s = samples[i];
        std::string line;
        for (uint32_t f = s.count; f-- > 0;) {
            line += frame_name(s.frames[f], names);
            line += f == 0 ? "" : ";";
        }
        ++folded[line.empty() ? std::string("[no stack]") : line];
    }
    FILE* out = std::fopen(output_path, "w");
    if (out == nullptr) {
        std::fprintf(stderr, "memtrail stack sampler: cannot write %s\n", output_path);
        return;
    }
    for (const auto& [line, n] : folded) {
        std::fprintf(out, "%s %zu\n", line.c_str(), n);
    }
    std::fclose(out);
    std::fprintf(stderr, "memtrail stack sampler: %zu samples (%zu taken) in %s\n", count,
                 taken.load(), output_path);
}

[[gnu::constructor]] void start_sampling() {
    const char* path = std::getenv("MEMTRAIL_SAMPLES");
    if (path == nullptr || *path == '\0') {
        return;
    }
    // One file per process: a program that starts others passes the preload on.
    static std::string per_process = std::string(path) + "." + std::to_string(getpid());
    output_path = per_process.c_str();
    sampled_process = getpid();
    void* memory = mmap(nullptr, sizeof(sample) * sample_capacity, PROT_READ | PROT_WRITE,
                        MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (memory == MAP_FAILED) {
        return;
    }
    samples = static_cast<sample*>(memory);
    struct sigaction action {};
    action.sa_sigaction = on_profile_signal;
    action.sa_flags = SA_SIGINFO | SA_RESTART;
    sigemptyset(&action.sa_mask);
    sigaction(SIGPROF, &action, nullptr);
    long period_us = 1000;
    if (const char* period = std::getenv("MEMTRAIL_SAMPLES_PERIOD_US")) {
        period_us = std::max(100L, std::atol(period));
    }
    sampling.store(true);
    itimerval timer{};
    timer.it_interval.tv_usec = period_us;
    timer.it_value.tv_usec = period_us;
    if (const char* after = std::getenv("MEMTRAIL_SAMPLES_AFTER_S")) {
        timer.it_value.tv_sec = std::max(0L, std::atol(after));
    }
    setitimer(ITIMER_PROF, &timer, nullptr);
    std::atexit(write_samples);
}

[[gnu::destructor]] void stop_sampling() {
    write_samples();
}

}  // namespace

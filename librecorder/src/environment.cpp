#include "detail/environment.hpp"

#include <array>
#include <charconv>
#include <csignal>
#include <cstdlib>
#include <stdexcept>
#include <string>

namespace memtrail::recorder::librecorder {

namespace {

[[noreturn]] void reject(const environment_option& option, std::string_view value) {
    throw std::invalid_argument("memtrail: " + std::string(option.name) + "=\"" +
                                std::string(value) + "\" is not valid; expected " +
                                std::string(option.accepted));
}

// A whole number, all of `text`.
template <typename Number>
bool parse_whole(std::string_view text, Number& out) {
    const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), out);
    return error == std::errc() && end == text.data() + text.size();
}

// --- the parsers: each stores into its member(s) of environment_settings --------------------

// A value that `parse` (a `bool parse(std::string_view, T&)`) reads into `member`.
template <auto member, auto parse>
void field(const environment_option& option, std::string_view value, environment_settings& s) {
    if (!parse(value, s.*member)) {
        reject(option, value);
    }
}

// The same, into a member of the history options.
template <auto member, auto parse>
void history_field(const environment_option& option, std::string_view value,
                   environment_settings& s) {
    if (!parse(value, s.history.*member)) {
        reject(option, value);
    }
}

void parse_device(const environment_option& option, std::string_view value,
                  environment_settings& s) {
    if (value == "cuda") {
        return;
    }
    if (value != "sim" && !value.starts_with("sim:")) {
        reject(option, value);
    }
    s.simulated_device = true;
    if (value != "sim") {
        try {
            s.simulated_capacity = parse_byte_size(value.substr(4));
        } catch (const std::invalid_argument&) {
            reject(option, value);
        }
    }
}

void parse_fail_rate(const environment_option& option, std::string_view value,
                     environment_settings& s) {
    const size_t colon = value.find(':');
    const std::string_view rate = value.substr(0, colon);
    const auto [end, error] =
        std::from_chars(rate.data(), rate.data() + rate.size(), s.failure_rate);
    if (error != std::errc() || end != rate.data() + rate.size() || !(s.failure_rate >= 0.0) ||
        s.failure_rate > 1.0) {
        reject(option, value);
    }
    if (colon != std::string_view::npos && !parse_whole(value.substr(colon + 1), s.failure_seed)) {
        reject(option, value);
    }
}

// production: every event, the stack of every allocation and none of the frees (PyTorch's
// context "alloc"), the mode to leave on in every job (docs/settings.md).
void parse_record(const environment_option& option, std::string_view value,
                  environment_settings& s) {
    if (value == "production") {
        s.history.enabled = record_mode::all;
        s.history.context = context_mode::alloc;
        return;
    }
    if (!parse_record_mode(value, s.history.enabled)) {
        reject(option, value);
    }
    s.history.context =
        s.history.enabled == record_mode::off ? context_mode::none : context_mode::all;
}

// 0 means the default, as memtrail_record_memory_history's max_entries does.
void parse_max_entries(const environment_option& option, std::string_view value,
                       environment_settings& s) {
    size_t entries = 0;
    if (!parse_whole(value, entries)) {
        reject(option, value);
    }
    s.history.max_entries = entries != 0 ? entries : default_max_entries;
}

// An allocator variable: kept as given, to be resolved against the others (resolve_allocator).
void given_alloc_conf(const environment_option& option, std::string_view value,
                      environment_settings& s) {
    if (!value.empty()) {
        s.allocator_given.emplace_back(option.name, std::string(value));
    }
}

// Whether `value` is `usual` or `other`; which one goes to `member` (true for `usual`).
template <auto member>
void lock_choice(const environment_option& option, std::string_view value, environment_settings& s,
                 std::string_view usual, std::string_view other) {
    if (value != usual && value != other) {
        reject(option, value);
    }
    s.allocator.device_lock.*member = value == usual;
}

void parse_device_lock_bias(const environment_option& option, std::string_view value,
                            environment_settings& s) {
    lock_choice<&device_lock_options::biased>(option, value, s, "on", "off");
}

// A launcher's number (RANK, ...): unset or empty, none.
template <auto member>
void launcher_number(const environment_option& option, std::string_view value,
                     environment_settings& s) {
    int32_t number = 0;
    if (value.empty()) {
        return;
    }
    if (!parse_whole(value, number) || number < 0) {
        reject(option, value);
    }
    s.job.*member = number;
}

// The job id: the first of the table's job id rows that is set, in the table's order. torchrun
// sets TORCHELASTIC_RUN_ID to "none" when it was given no --rdzv-id: that names no job.
void job_id(const environment_option&, std::string_view value, environment_settings& s) {
    if (s.job.job_id.empty() && value != "none") {
        s.job.job_id = value;
    }
}

void parse_interpose_mode(const environment_option& option, std::string_view value,
                          environment_settings& s) {
    if (value != "cache" && value != "observe") {
        reject(option, value);
    }
    s.mode = value == "cache" ? interpose_mode::cache : interpose_mode::observe;
}

// A path pattern: any text.
bool read_text(std::string_view value, std::string& out) {
    out = value;
    return true;
}

// Only signals nothing else means: SIGUSR1, SIGUSR2 and the real-time ones. A signal that
// reports a fault (SIGSEGV) or asks the process to stop (SIGTERM) must keep its meaning, and
// SIGKILL and SIGSTOP cannot be caught at all.
void parse_dump_signal(const environment_option& option, std::string_view value,
                       environment_settings& s) {
    std::string_view name = value;
    if (name.starts_with("SIG")) {
        name.remove_prefix(3);
    }
    int number = 0;
    if (name == "USR1") {
        number = SIGUSR1;
    } else if (name == "USR2") {
        number = SIGUSR2;
    } else if (name == "RTMIN") {
        number = SIGRTMIN;
    } else if (name.starts_with("RTMIN+")) {
        if (!parse_whole(name.substr(6), number) || number < 0 || number > SIGRTMAX - SIGRTMIN) {
            reject(option, value);
        }
        number += SIGRTMIN;
    } else if (name != value || !parse_whole(value, number)) {
        reject(option, value);
    }
    const bool real_time = number >= SIGRTMIN && number <= SIGRTMAX;
    if (number != SIGUSR1 && number != SIGUSR2 && !real_time) {
        reject(option, value);
    }
    s.dump_signal = number;
}

// on/1 or off/0.
bool parse_switch(std::string_view value, bool& out) {
    if (value == "on" || value == "1") {
        out = true;
        return true;
    }
    if (value == "off" || value == "0") {
        out = false;
        return true;
    }
    return false;
}

// clang-format off
constexpr std::string_view librecorder = "librecorder";
constexpr std::string_view interposer = "interposer";
constexpr auto options = std::to_array<environment_option>({
    // name, default, accepted (what an error says), used by, meaning; parser (and member)
    {"MEMTRAIL_DEVICE",        "cuda",      "cuda, or sim[:capacity] with a capacity of at least 1 byte (sim:80GiB)",   "librecorder, interposer",
     "the device: every visible GPU, or a simulated one",                                          parse_device},
    {"MEMTRAIL_SIM_FAIL_NTH",  "0",         "a whole number (0: none)",                                                 librecorder,
     "the simulated device's Nth device allocation reports out of memory, once",                  field<&environment_settings::fail_nth_allocation, parse_whole<uint64_t>>},
    {"MEMTRAIL_SIM_FAIL_RATE", "0",         "a probability from 0 to 1, optionally with :SEED (0.01:7)",                librecorder,
     "each device allocation of the simulated device reports out of memory with this probability", parse_fail_rate},
    {"MEMTRAIL_RECORD",        "off",       "off, state, all or production",                                            librecorder,
     "record history from the start: all with every stack (context all), production without frees' stacks (context alloc)", parse_record},
    {"MEMTRAIL_STACKS",        "native",    "native, python or all",                                                    librecorder,
     "stacks recorded with MEMTRAIL_RECORD",                                                      history_field<&history_options::stacks, parse_stack_source>},
    {"MEMTRAIL_MAX_ENTRIES",   "1000000",   "a whole number (0: the default)",                                          librecorder,
     "trace entries kept per device; older ones are dropped and counted",                         parse_max_entries},
    {"MEMTRAIL_UNWINDER",      "eh_frame",  "eh_frame, libunwind or frame_pointer",                                     "stacks",
     "the native unwinder",                                                                        history_field<&history_options::stack_unwinder, parse_unwinder>},
    {"MEMTRAIL_PYTHON_FRAMES", "direct",    "direct, api or verify",                                                    "Python frame reader",
     "how Python frames are read: from CPython's structures, through its API, or both compared",  field<&environment_settings::python_frames, parse_python_frames_source>},
    {"MEMTRAIL_ALLOC_CONF",    "",          "allocator settings in PYTORCH_CUDA_ALLOC_CONF syntax",                     librecorder,
     "the allocator's settings; wins over PyTorch's variables",                                   given_alloc_conf},
    {"PYTORCH_ALLOC_CONF",     "",          "allocator settings in PYTORCH_CUDA_ALLOC_CONF syntax",                     librecorder,
     "PyTorch's allocator settings, read as PyTorch reads them when MEMTRAIL_ALLOC_CONF is unset", given_alloc_conf},
    {"PYTORCH_CUDA_ALLOC_CONF", "",         "allocator settings in PYTORCH_CUDA_ALLOC_CONF syntax",                     librecorder,
     "PyTorch's older name, read when PYTORCH_ALLOC_CONF is unset too",                            given_alloc_conf},
    {"MEMTRAIL_DEVICE_LOCK_BIAS", "on",     "on or off",                                                                "core",
     "whether a device's lock is biased to the thread that takes it most",                         parse_device_lock_bias},
    {"MEMTRAIL_OOM_DUMP",      "",          "a path pattern (%p pid, %d device, %t time)",                              librecorder,
     "a snapshot written on each out-of-memory, the first 16 of them",                             field<&environment_settings::oom_dump_pattern, read_text>},
    {"MEMTRAIL_SIGNAL_DUMP",   "",          "a path pattern (%p pid, %t time)",                                         librecorder,
     "a snapshot written when MEMTRAIL_DUMP_SIGNAL arrives",                                       field<&environment_settings::signal_dump_pattern, read_text>},
    {"MEMTRAIL_DUMP_SIGNAL",   "SIGUSR1",   "SIGUSR1, SIGUSR2 or a real-time signal (SIGRTMIN+N), by name or number",   librecorder,
     "the signal for MEMTRAIL_SIGNAL_DUMP",                                                        parse_dump_signal},
    {"MEMTRAIL_LIVE",          "on",        "on or off (also 1 or 0)",                                                  librecorder,
     "the attach endpoint of memtrail snapshot PID and top --attach (same user only; docs/live.md)", field<&environment_settings::live, parse_switch>},
    {"MEMTRAIL_MODE",          "cache",     "cache or observe",                                                         interposer,
     "cache: memtrail's allocator serves device allocations; observe: CUDA does, and memtrail records them", parse_interpose_mode},
    {"MEMTRAIL_EXIT_DUMP",     "",          "a path pattern (%p pid)",                                                  interposer,
     "the snapshot written when the program exits, if any of its device memory reached memtrail",  field<&environment_settings::exit_dump_pattern, read_text>},
    {"MEMTRAIL_RUN_FILES",     "",          "a file's path",                                                            librecorder,
     "where each process of a memtrail run adds the path of every snapshot it writes (set by memtrail run)", field<&environment_settings::run_files, read_text>},
    {"RANK",                   "",          "a whole number",                                                           librecorder,
     "the process's rank, from its launcher (torchrun)",                                          launcher_number<&job_identity::rank>},
    {"LOCAL_RANK",             "",          "a whole number",                                                           librecorder,
     "the process's rank on its host, from its launcher",                                         launcher_number<&job_identity::local_rank>},
    {"WORLD_SIZE",             "",          "a whole number",                                                           librecorder,
     "how many ranks the job has, from its launcher",                                             launcher_number<&job_identity::world_size>},
    {"TORCHELASTIC_RUN_ID",    "",          "any text (none: no job id)",                                               librecorder,
     "the job id torchrun gives its ranks (--rdzv-id)",                                           job_id},
    {"SLURM_JOB_ID",           "",          "any text",                                                                 librecorder,
     "the job id under Slurm, when torchrun gave none",                                           job_id},
});
// clang-format on

}  // namespace

std::span<const environment_option> environment_options() {
    return options;
}

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
    // Written so that NaN fails too: every comparison with it is false.
    const bool in_range = value * scale >= 1 && value * scale < 0x1p64;
    if (error != std::errc() || end != number.data() + number.size() || !in_range) {
        throw std::invalid_argument("memtrail: \"" + std::string(text) +
                                    "\" is not a size of at least 1 byte (examples: 80GiB, "
                                    "512MiB, 4096)");
    }
    return static_cast<uint64_t>(value * scale);
}

namespace {

// The allocator settings in force: the first variable given (MEMTRAIL_ALLOC_CONF, then PyTorch's
// two as c10's AllocatorConfig reads them: PYTORCH_ALLOC_CONF, else PYTORCH_CUDA_ALLOC_CONF), and
// what the others say, when they say something else.
void resolve_allocator(environment_settings& s) {
    if (s.allocator_given.empty()) {
        return;
    }
    const auto& [origin, text] = s.allocator_given.front();
    const device_lock_options lock = s.allocator.device_lock;
    // allocator_config's own errors say which key and value are wrong; they name the variable too.
    s.allocator = allocator_config::parse(text, origin);
    s.allocator.device_lock = lock;
    s.allocator_origin = origin;
    for (size_t i = 1; i < s.allocator_given.size(); ++i) {
        const auto& [ignored, other] = s.allocator_given[i];
        if (other != text) {
            s.allocator_conflict += (s.allocator_conflict.empty() ? "" : ", ") +
                                    std::string(ignored) + "=\"" + other + "\"";
        }
    }
    if (!s.allocator_conflict.empty()) {
        s.allocator_conflict = "memtrail: allocator settings from " + std::string(origin) + "=\"" +
                               text + "\"; not used: " + s.allocator_conflict;
    }
}

}  // namespace

environment_settings read_environment() {
    environment_settings settings;
    for (const environment_option& option : options) {
        const char* value = std::getenv(std::string(option.name).c_str());
        option.parse(option, value != nullptr ? std::string_view(value) : option.default_value,
                     settings);
    }
    resolve_allocator(settings);
    // memtrail run's default names, inherited by every rank of torchrun, get the rank.
    if (settings.job.rank >= 0) {
        for (std::string* pattern : {&settings.exit_dump_pattern, &settings.oom_dump_pattern,
                                     &settings.signal_dump_pattern}) {
            if (pattern->starts_with(default_run_stem)) {
                pattern->replace(0, default_run_stem.size(), ranked_run_stem);
            }
        }
    }
    const bool faults = settings.fail_nth_allocation != 0 || settings.failure_rate > 0.0;
    if (faults && !settings.simulated_device) {
        throw std::invalid_argument(
            "memtrail: MEMTRAIL_SIM_FAIL_NTH and MEMTRAIL_SIM_FAIL_RATE inject faults into the "
            "simulated device only; set MEMTRAIL_DEVICE=sim[:capacity] with them");
    }
    return settings;
}

}  // namespace memtrail::recorder::librecorder

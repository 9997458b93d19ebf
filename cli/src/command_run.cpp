// memtrail run [OPTIONS] -- COMMAND [ARGS...] : runs a program with memtrail in it, unchanged.
// The program gets libmemtrail_interpose.so preloaded (its CUDA allocation calls reach memtrail)
// and, for Python, sitecustomize.py first on its path (PyTorch allocates from memtrail); the
// options travel as librecorder's environment variables. This process waits for the program,
// forwards the signals sent to it, reports the snapshot the program left and exits as it did.
//
// Index of this file:
// [SECTION] signals
// [SECTION] checking the options
// [SECTION] the program's environment
// [SECTION] running the program
// [SECTION] the snapshots it left
// [SECTION] the command

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <set>
#include <string>
#include <vector>

#include "detail/commands.hpp"
#include "detail/common.hpp"
#include "detail/run_dumps.hpp"
#include "memtrail/analysis/size_text.hpp"
#include "memtrail/core/allocator_config.hpp"

namespace memtrail::cli {
namespace {

namespace fs = std::filesystem;

constexpr const char* default_dump = "memtrail-%p.memtrail";

volatile sig_atomic_t child_pid = 0;

//-------------------------------------------------------------------------------------------------
// [SECTION] signals
//-------------------------------------------------------------------------------------------------

// Signals another process sends to `memtrail run` go to the program; those from the terminal
// (Ctrl-C) reached the program's process group already and are not sent twice.
void forward_signal(int signal, siginfo_t* info, void*) {
    const bool from_a_process =
        info != nullptr && (info->si_code == SI_USER || info->si_code == SI_QUEUE);
    if (child_pid > 0 && from_a_process) {
        kill(child_pid, signal);
    }
}

constexpr int forwarded_signals[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2};

void forward_signals() {
    struct sigaction action {};
    action.sa_sigaction = forward_signal;
    action.sa_flags = SA_SIGINFO | SA_RESTART;
    sigemptyset(&action.sa_mask);
    for (const int signal : forwarded_signals) {
        sigaction(signal, &action, nullptr);
    }
}

//-------------------------------------------------------------------------------------------------
// [SECTION] checking the options
//-------------------------------------------------------------------------------------------------

// Installed beside this executable: bin/memtrail, lib/libmemtrail_interpose.so,
// lib/memtrail/python/sitecustomize.py, bin/memtrail-viewer.
fs::path executable_dir() {
    return fs::read_symlink("/proc/self/exe").parent_path();
}

std::string checked_choice(const parsed_arguments& args, const std::string& option,
                           const std::string& fallback, const std::vector<std::string>& choices) {
    const std::string value = args.value(option).value_or(fallback);
    std::string accepted;
    for (const std::string& choice : choices) {
        if (value == choice) {
            return value;
        }
        accepted += (accepted.empty() ? "" : ", ") + choice;
    }
    throw usage_error(option + " " + value + " is not one of " + accepted);
}

std::string checked_device(const parsed_arguments& args) {
    const std::string device = args.value("--device").value_or("cuda");
    if (device == "cuda" || device == "sim") {
        return device;
    }
    if (!device.starts_with("sim:")) {
        throw usage_error("--device " + device + " is not cuda or sim:SIZE (sim:16GiB)");
    }
    if (parse_size_option("--device", device.substr(4)) == 0) {
        throw usage_error("--device " + device +
                          ": a simulated device needs some memory (sim:16GiB)");
    }
    return device;
}

// The folder a dump pattern writes into must be there and writable before the program runs:
// found only at exit, a bad one would lose the whole run.
void check_dump_folder(const std::string& option, const std::string& pattern) {
    const fs::path path(pattern);
    const fs::path folder = path.has_parent_path() ? path.parent_path() : fs::path(".");
    std::error_code error;
    if (!fs::is_directory(folder, error)) {
        throw usage_error(option + " " + pattern + ": the folder " + folder.string() +
                          " does not exist; make it first");
    }
    if (::access(folder.c_str(), W_OK | X_OK) != 0) {
        throw usage_error(option + " " + pattern + ": the folder " + folder.string() +
                          " is not writable: " + std::strerror(errno));
    }
    if (pattern.find('%') == std::string::npos && fs::is_directory(path, error)) {
        throw usage_error(option + " " + pattern + " is a directory; give a file's path");
    }
}

// "run.memtrail" -> "run-signal-%t.memtrail": snapshots on SIGUSR1 (or on out-of-memory, with
// "oom") keep the final one from replacing them.
std::string beside_dump(const std::string& dump, const std::string& what) {
    const fs::path path(dump);
    return (path.parent_path() /
            (path.stem().string() + "-" + what + "-%t" + path.extension().string()))
        .string();
}

// --production is --record production; given with another --record, it is refused.
std::string checked_record(const parsed_arguments& args) {
    const std::string record =
        checked_choice(args, "--record", "all", {"off", "state", "all", "production"});
    if (args.has("--production") && args.value("--record") && record != "production") {
        throw usage_error("--production records as --record production; --record " + record +
                          " asks for something else: give one of them");
    }
    return args.has("--production") ? "production" : record;
}

void prepend_path(const char* variable, const std::string& entry, char separator) {
    const char* old = std::getenv(variable);
    const std::string value = old != nullptr && *old != '\0' ? entry + separator + old : entry;
    setenv(variable, value.c_str(), 1);
}

//-------------------------------------------------------------------------------------------------
// [SECTION] the program's environment
//-------------------------------------------------------------------------------------------------

// Where every process of the program's tree lists the snapshots it writes (MEMTRAIL_RUN_FILES):
// a folder of this run's own, removed when the run ends.
class written_list {
  public:
    written_list() {
        std::string folder = (fs::temp_directory_path() / "memtrail-run-XXXXXX").string();
        if (::mkdtemp(folder.data()) == nullptr) {
            throw std::runtime_error("cannot make a folder for the run's list of snapshots in " +
                                     fs::path(folder).parent_path().string() + ": " +
                                     std::strerror(errno));
        }
        folder_ = folder;
    }
    ~written_list() {
        std::error_code ignored;
        fs::remove_all(folder_, ignored);
    }
    written_list(const written_list&) = delete;
    written_list& operator=(const written_list&) = delete;

    fs::path file() const { return folder_ / "snapshots"; }

    // The snapshots listed that are there, each once, in the order they were written; shown
    // relative to this process's folder where they lie under it.
    std::vector<std::string> snapshots() const {
        std::vector<std::string> found;
        std::set<std::string> seen;
        std::ifstream in(file());
        std::string line;
        while (std::getline(in, line)) {
            std::error_code error;
            if (line.empty() || !seen.insert(line).second || !fs::exists(line, error)) {
                continue;
            }
            const fs::path shown = fs::proximate(line, error);
            found.push_back(error || shown.string().starts_with("..") ? line : shown.string());
        }
        return found;
    }

  private:
    fs::path folder_;
};

// The program's environment: the interposer, Python's hook and librecorder's settings.
void prepare_environment(const parsed_arguments& args, const fs::path& interposer,
                         const std::string& dump, const written_list& written) {
    prepend_path("LD_PRELOAD", interposer.string(), ':');
    prepend_path("PYTHONPATH", (interposer.parent_path() / "memtrail" / "python").string(), ':');
    setenv("MEMTRAIL_DEVICE", checked_device(args).c_str(), 1);
    setenv("MEMTRAIL_MODE", checked_choice(args, "--mode", "cache", {"cache", "observe"}).c_str(),
           1);
    const std::string record = checked_record(args);
    setenv("MEMTRAIL_RECORD", record.c_str(), 1);
    setenv("MEMTRAIL_STACKS",
           checked_choice(args, "--stacks", "all", {"native", "python", "all"}).c_str(), 1);
    if (const auto entries = args.value("--max-entries")) {
        setenv("MEMTRAIL_MAX_ENTRIES",
               std::to_string(parse_count_option("--max-entries", *entries)).c_str(), 1);
    }
    if (const auto conf = args.value("--alloc-conf")) {
        try {
            allocator_config::parse(*conf);
        } catch (const std::exception& error) {
            throw usage_error("--alloc-conf: " + std::string(error.what()));
        }
        setenv("MEMTRAIL_ALLOC_CONF", conf->c_str(), 1);
    }
    if (const auto oom = args.value("--oom-dump")) {
        check_dump_folder("--oom-dump", *oom);
        setenv("MEMTRAIL_OOM_DUMP", oom->c_str(), 1);
    } else if (record == "production") {
        setenv("MEMTRAIL_OOM_DUMP", beside_dump(dump, "oom").c_str(), 1);
    }
    setenv("MEMTRAIL_EXIT_DUMP", dump.c_str(), 1);
    setenv("MEMTRAIL_SIGNAL_DUMP", beside_dump(dump, "signal").c_str(), 1);
    setenv("MEMTRAIL_DUMP_SIGNAL", "SIGUSR1", 1);
    setenv("MEMTRAIL_RUN_FILES", written.file().c_str(), 1);
}

//-------------------------------------------------------------------------------------------------
// [SECTION] running the program
//-------------------------------------------------------------------------------------------------

struct finished_program {
    pid_t pid = 0;
    int status = 0;  // as waitpid reports it
};

finished_program run_and_wait(const std::vector<std::string>& command) {
    std::vector<char*> argv;
    for (const std::string& arg : command) {
        argv.push_back(const_cast<char*>(arg.c_str()));
    }
    argv.push_back(nullptr);
    const pid_t pid = fork();
    if (pid < 0) {
        throw std::runtime_error(std::string("cannot start a process: ") + std::strerror(errno));
    }
    if (pid == 0) {
        execvp(argv[0], argv.data());
        std::cerr << "memtrail: cannot run " << command[0] << ": " << std::strerror(errno) << "\n";
        _exit(127);
    }
    child_pid = pid;
    int status = 0;
    while (waitpid(pid, &status, 0) < 0) {
        if (errno != EINTR) {
            throw std::runtime_error(std::string("waiting for the program: ") +
                                     std::strerror(errno));
        }
    }
    child_pid = 0;
    return {pid, status};
}

//-------------------------------------------------------------------------------------------------
// [SECTION] the snapshots it left
//-------------------------------------------------------------------------------------------------

// A file at the dump path from an earlier run is moved aside to PATH.previous, so that no old
// file is ever reported as this run's snapshot. Only for a fixed name: %p names a new file.
void move_earlier_snapshot_aside(const std::string& dump) {
    if (dump.find('%') != std::string::npos) {
        return;
    }
    std::error_code error;
    if (!fs::exists(fs::symlink_status(dump, error))) {
        return;
    }
    const std::string aside = dump + ".previous";
    fs::rename(dump, aside, error);
    if (error) {
        throw usage_error("--dump " + dump +
                          ": an earlier file is there and cannot be moved aside to " + aside +
                          ": " + error.message());
    }
    std::cerr << "memtrail run: moved the earlier " << dump << " aside to " << aside << "\n";
}

// Why the program left no snapshot, from how it ended.
std::string why_no_snapshot(int status) {
    if (WIFSIGNALED(status)) {
        const int signal = WTERMSIG(status);
        const char* name = sigdescr_np(signal);
        const std::string by = "the program was ended by signal " + std::to_string(signal) + " (" +
                               (name != nullptr ? name : "unknown") + ")";
        if (signal == SIGTERM) {
            return by +
                   " and had either made no device allocation or a SIGTERM handler of its "
                   "own that did not exit through exit()";
        }
        return by +
               ", which leaves no time to write one (SIGTERM, SIGINT with Python, exit() "
               "and _exit() do)";
    }
    return "the program exited with status " + std::to_string(WEXITSTATUS(status)) +
           " without making a device allocation through memtrail (a launcher or a shell: its "
           "children write their own), or it could not write it (its message is above)";
}

std::string expand_pid(const std::string& pattern, pid_t pid) {
    std::string path;
    for (size_t i = 0; i < pattern.size(); ++i) {
        if (pattern[i] == '%' && i + 1 < pattern.size() &&
            (pattern[i + 1] == 'p' || pattern[i + 1] == '%')) {
            path += pattern[i + 1] == 'p' ? std::to_string(pid) : "%";
            ++i;
        } else {
            path += pattern[i];
        }
    }
    return path;
}

// "memtrail: snapshot written to PATH: peak allocated X, peak reserved Y, N out-of-memory errors"
void report_snapshot(const std::string& path) {
    const opened_file file = open_file(path, parsed_arguments{});
    size_t ooms = 0;
    for (const snapshot::device_trace& trace : file.model.source().traces) {
        for (const snapshot::trace_entry& entry : trace.entries) {
            ooms += entry.kind == snapshot::action::oom ? 1 : 0;
        }
    }
    // One write: under `torchrun --no-python ... memtrail run`, every rank's memtrail run shares
    // the one stderr, and a line written in pieces would interleave with the others'.
    const std::string line =
        "memtrail: snapshot written to " + path + ": peak allocated " +
        analysis::format_bytes(peak_bytes(file.model, analysis::series::allocated)) +
        ", peak reserved " +
        analysis::format_bytes(peak_bytes(file.model, analysis::series::reserved)) + ", " +
        std::to_string(ooms) + " out-of-memory error" + (ooms == 1 ? "" : "s") + "\n";
    std::cerr << line << std::flush;
}

int exit_code_of(int status) {
    if (WIFEXITED(status)) {
        return WEXITSTATUS(status);
    }
    return WIFSIGNALED(status) ? 128 + WTERMSIG(status) : 1;
}

}  // namespace

//-------------------------------------------------------------------------------------------------
// [SECTION] the command
//-------------------------------------------------------------------------------------------------

command_spec run_spec() {
    command_spec spec;
    spec.name = "run";
    spec.usage = "[OPTIONS] [--] COMMAND [ARGS...]";
    spec.summary =
        "Run a program with memtrail in it, unchanged, and write its snapshot when it exits";
    spec.details =
        "Native CUDA programs (shared or static CUDA runtime, driver API) get their device\n"
        "allocations served by memtrail's caching allocator (--mode cache) or recorded as they\n"
        "pass to CUDA (--mode observe); `memtrail run python script.py` makes PyTorch allocate\n"
        "from memtrail. The snapshot is written when the program exits, on SIGUSR1 (to\n"
        "NAME-signal-TIME.EXT beside it) and, with --oom-dump, on every out-of-memory error.\n"
        "Signals sent to memtrail run go to the program; it exits with the program's status\n"
        "(128 + N when signal N ended it). docs/cli.md describes what is recorded.";
    spec.min_positional = 1;
    spec.has_json = false;
    spec.positional_ends_options = true;
    spec.options = {
        {"--device", "", "cuda|sim:SIZE",
         "the device: the GPUs (default), or a simulated one (sim:16GiB) that needs none"},
        {"--mode", "", "cache|observe",
         "cache (default): memtrail's allocator serves the program; observe: CUDA does, recorded"},
        {"--record", "", "off|state|all|production",
         "history recorded (default all; production: every event, allocations' stacks only)"},
        {"--production", "", "",
         "the mode to leave on: --record production, with a snapshot on every out-of-memory"},
        {"--stacks", "", "native|python|all", "stacks recorded (default all)"},
        {"--max-entries", "", "N", "trace entries kept per device (default 1000000)"},
        {"--dump", "", "PATH",
         "snapshot written at exit by each process that allocated (default "
         "memtrail-%p.memtrail, memtrail-rank%r-%p.memtrail where RANK is set; %p pid, %r RANK, "
         "%l LOCAL_RANK, %j job id; .pickle: PyTorch's)"},
        {"--oom-dump", "", "PATTERN",
         "snapshot written on every out-of-memory (%p, %d, %t, %r, %l, %j)"},
        {"--alloc-conf", "", "CONF", "allocator settings, PYTORCH_CUDA_ALLOC_CONF syntax"},
        {"--view", "", "", "open memtrail-viewer on the snapshot when the program ends"},
        {"--summary", "", "",
         "write a rank summary (docs/ranks.md) beside every snapshot the run wrote, when the "
         "program ends"},
    };
    return spec;
}

int run_run(const parsed_arguments& args) {
    const fs::path interposer = executable_dir().parent_path() / "lib" / "libmemtrail_interpose.so";
    if (!fs::exists(interposer)) {
        throw usage_error(interposer.string() +
                          " is missing (it is built where the CUDA toolkit is found)");
    }
    // Without its hook a Python program still runs, but PyTorch keeps its own allocator and the
    // stacks lose their Python frames: said, since nothing else would show it.
    const fs::path python_hook =
        interposer.parent_path() / "memtrail" / "python" / "sitecustomize.py";
    if (!fs::exists(python_hook)) {
        std::cerr << "memtrail run: " << python_hook.string()
                  << " is missing: a Python program runs without it, but PyTorch keeps its own "
                     "allocator and the stacks have no Python frames (install memtrail whole)\n";
    }
    const std::string dump = args.value("--dump").value_or(default_dump);
    check_dump_folder("--dump", dump);
    const written_list written;
    prepare_environment(args, interposer, dump, written);
    move_earlier_snapshot_aside(dump);
    forward_signals();

    const finished_program program = run_and_wait(args.positional);
    // Every snapshot of the program's tree: each rank's, a forked child's, those on
    // out-of-memory and on SIGUSR1; a process that allocated nothing (a launcher) wrote none.
    const std::vector<std::string> paths = written.snapshots();
    // The CLI summarizes after the program: librecorder writes snapshots and nothing else.
    if (args.has("--summary")) {
        summarize_dumps(paths);
    }
    if (paths.empty()) {
        std::cerr << "memtrail: no snapshot at " << expand_pid(dump, program.pid) << ": "
                  << why_no_snapshot(program.status) << "\n";
        return exit_code_of(program.status);
    }
    for (const std::string& path : paths) {
        try {
            report_snapshot(path);
        } catch (const std::exception& error) {
            std::cerr << "memtrail: the snapshot " << path << " cannot be read: " << error.what()
                      << "\n";
        }
    }
    if (args.has("--view")) {
        std::vector<std::string> viewer = {(executable_dir() / "memtrail-viewer").string()};
        viewer.insert(viewer.end(), paths.begin(), paths.end());
        run_and_wait(viewer);
    }
    return exit_code_of(program.status);
}

}  // namespace memtrail::cli

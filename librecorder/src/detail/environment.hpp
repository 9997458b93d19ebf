#pragma once
// Every setting of the product, in one table (environment.cpp), read from the environment in one
// place: librecorder's own, the interposer's, core's device lock and the Python frame reader's,
// which receive the values parsed here and read no variable themselves. docs/settings.md lists
// the same rows, and librecorder/README.md and memtrail.h the same names
// (tests/librecorder/environment_test.cpp compares them with the table).

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "detail/job_identity.hpp"
#include "memtrail/core/allocator_config.hpp"
#include "memtrail/recorder/history_options.hpp"
#include "memtrail/stacks/python_frames.hpp"

namespace memtrail::recorder::librecorder {

// What libmemtrail_interpose.so does with the program's device allocations (MEMTRAIL_MODE).
enum class interpose_mode {
    cache,    // they come from memtrail's caching allocator
    observe,  // they go to CUDA as before, and are recorded
};

struct environment_settings {
    bool simulated_device = false;  // MEMTRAIL_DEVICE=sim[:capacity]
    uint64_t simulated_capacity = 80ull << 30;
    uint64_t fail_nth_allocation = 0;  // MEMTRAIL_SIM_FAIL_NTH; 0 = none
    double failure_rate = 0.0;         // MEMTRAIL_SIM_FAIL_RATE
    uint64_t failure_seed = 1;
    history_options history;  // MEMTRAIL_RECORD, MEMTRAIL_STACKS, ...
    python_frames_source python_frames = python_frames_source::direct;  // MEMTRAIL_PYTHON_FRAMES
    // MEMTRAIL_ALLOC_CONF, else PYTORCH_ALLOC_CONF, else PYTORCH_CUDA_ALLOC_CONF; with
    // MEMTRAIL_DEVICE_LOCK_BIAS in allocator.device_lock.
    allocator_config allocator;
    // The allocator variables that are set (not empty), as (name, value), in the order they win.
    std::vector<std::pair<std::string_view, std::string>> allocator_given;
    // The variable `allocator` was read from ("" when none is set).
    std::string_view allocator_origin;
    // When the allocator variables disagree: which value is used and which are not, for the
    // runtime to say once on stderr; "" when they agree.
    std::string allocator_conflict;
    std::string oom_dump_pattern;                 // MEMTRAIL_OOM_DUMP
    std::string signal_dump_pattern;              // MEMTRAIL_SIGNAL_DUMP
    int dump_signal = 0;                          // MEMTRAIL_DUMP_SIGNAL
    interpose_mode mode = interpose_mode::cache;  // MEMTRAIL_MODE
    std::string exit_dump_pattern;                // MEMTRAIL_EXIT_DUMP
    job_identity job;  // RANK, LOCAL_RANK, WORLD_SIZE, TORCHELASTIC_RUN_ID, SLURM_JOB_ID
    // MEMTRAIL_RUN_FILES: where every process of a `memtrail run` tree adds the path of each
    // snapshot it writes ("" = nowhere).
    std::string run_files;
    bool live = true;  // MEMTRAIL_LIVE: the attach endpoint (docs/live.md)
};

// How `memtrail run`'s dumps are named without --dump ("memtrail-%p.memtrail", and its signal
// and OOM dumps beside it), and what that start becomes in a process with RANK set (each rank of
// torchrun, which inherits it): "memtrail-rank%r-%p.memtrail".
inline constexpr std::string_view default_run_stem = "memtrail-%p";
inline constexpr std::string_view ranked_run_stem = "memtrail-rank%r-%p";

// One row of the table, as mimalloc keeps its options.
struct environment_option {
    std::string_view name;
    std::string_view default_value;  // what an unset variable means
    std::string_view accepted;       // its type: what an error says is accepted
    std::string_view used_by;        // who receives the value: librecorder, interposer, core, ...
    std::string_view meaning;        // one line
    // Parses a value (the default included) into its member(s) of environment_settings;
    // throws std::invalid_argument when the value is not accepted.
    void (*parse)(const environment_option& option, std::string_view value,
                  environment_settings& settings);
};

// Every variable the product reads, in the order docs/settings.md lists them.
std::span<const environment_option> environment_options();

/// Reads every variable of the table.
/// @throws std::invalid_argument naming the variable, its value and what it accepts.
environment_settings read_environment();

// "80GiB", "512MiB", "1.5GB", "4096": bytes (at least 1), with binary (KiB, MiB, GiB, TiB) or
// decimal (KB, MB, GB, TB) units. Throws std::invalid_argument.
uint64_t parse_byte_size(std::string_view text);

}  // namespace memtrail::recorder::librecorder

// librecorder's table of environment variables: every bad value is refused with the variable's
// name, what is accepted is read as documented, and the docs list exactly the table's variables.

#include <gtest/gtest.h>

#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <set>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "detail/environment.hpp"
#include "doc_text.hpp"

namespace memtrail::recorder::librecorder {
namespace {

// Each test starts from an environment without any of the table's variables.
class environment : public ::testing::Test {
  protected:
    void SetUp() override { unset_all(); }
    void TearDown() override { unset_all(); }

    static void unset_all() {
        for (const environment_option& option : environment_options()) {
            unsetenv(std::string(option.name).c_str());
        }
    }

    // Reads the environment with these variables set.
    static environment_settings read_with(const std::map<std::string, std::string>& variables) {
        unset_all();
        for (const auto& [name, value] : variables) {
            setenv(name.c_str(), value.c_str(), 1);
        }
        return read_environment();
    }

    // Expects the value refused, with an error that names `blamed` (the variable itself unless
    // given).
    static void expect_refused(const std::map<std::string, std::string>& variables,
                               const std::string& blamed) {
        try {
            read_with(variables);
            ADD_FAILURE() << "accepted: " << variables.begin()->first << "="
                          << variables.begin()->second;
        } catch (const std::invalid_argument& e) {
            EXPECT_NE(std::string(e.what()).find(blamed), std::string::npos)
                << "the error for " << variables.begin()->first << "=" << variables.begin()->second
                << " does not name " << blamed << ": " << e.what();
        }
    }
    static void expect_refused(const std::string& name, const std::string& value) {
        expect_refused({{name, value}}, name);
    }
};

TEST_F(environment, defaults) {
    const environment_settings s = read_environment();
    EXPECT_FALSE(s.simulated_device);
    EXPECT_EQ(s.history.enabled, record_mode::off);
    EXPECT_EQ(s.history.max_entries, default_max_entries);
    EXPECT_EQ(s.dump_signal, SIGUSR1);
    EXPECT_EQ(s.fail_nth_allocation, 0u);
    EXPECT_EQ(s.failure_rate, 0.0);
    EXPECT_EQ(s.allocator.max_split_size, allocator_config{}.max_split_size);
}

// sim:nan was taken (and made a device of undefined size), sim:0.1 a device of 0 bytes, and
// sim: the default one.
TEST_F(environment, simulated_capacity_is_a_size_of_at_least_one_byte) {
    for (const char* bad : {"sim:nan", "sim:NaNGiB", "sim:inf", "sim:0.1", "sim:0",
                            "sim:", "sim:-1GiB", "sim:1e30TiB", "simulated", "gpu"}) {
        expect_refused("MEMTRAIL_DEVICE", bad);
    }
    EXPECT_EQ(read_with({{"MEMTRAIL_DEVICE", "sim:1.5GB"}}).simulated_capacity, 1'500'000'000u);
    EXPECT_EQ(read_with({{"MEMTRAIL_DEVICE", "sim:1"}}).simulated_capacity, 1u);
    const environment_settings plain = read_with({{"MEMTRAIL_DEVICE", "sim"}});
    EXPECT_TRUE(plain.simulated_device);
    EXPECT_EQ(plain.simulated_capacity, 80ull << 30);
}

// 11 (SIGSEGV) turned a crash into a loop of dumps, 15 (SIGTERM) stopped nothing, 9 (SIGKILL)
// failed in sigaction without naming the variable.
TEST_F(environment, dump_signal_is_one_nothing_else_means) {
    for (const std::string& bad :
         {std::to_string(SIGSEGV), std::to_string(SIGTERM), std::to_string(SIGKILL),
          std::to_string(SIGINT), std::to_string(SIGSTOP), std::string("0"), std::string("-10"),
          std::to_string(SIGRTMIN - 1), std::to_string(SIGRTMAX + 1), std::string("SIGTERM"),
          std::string("SIGSEGV"), std::string("SIGRTMIN+99"), std::string("SIGRTMIN+-1"),
          std::string("SIGRTMIN+"), std::string("usr1"), std::string("")}) {
        expect_refused("MEMTRAIL_DUMP_SIGNAL", bad);
    }
    const std::vector<std::pair<std::string, int>> good = {
        {"SIGUSR1", SIGUSR1},
        {"USR2", SIGUSR2},
        {std::to_string(SIGUSR2), SIGUSR2},
        {"SIGRTMIN", SIGRTMIN},
        {"SIGRTMIN+3", SIGRTMIN + 3},
        {"RTMIN+1", SIGRTMIN + 1},
        {std::to_string(SIGRTMAX), SIGRTMAX},
    };
    for (const auto& [value, number] : good) {
        EXPECT_EQ(read_with({{"MEMTRAIL_DUMP_SIGNAL", value}}).dump_signal, number) << value;
    }
}

TEST_F(environment, allocator_configuration_errors_name_the_variable) {
    expect_refused("MEMTRAIL_ALLOC_CONF", "max_split_size_mb:1");
    expect_refused("MEMTRAIL_ALLOC_CONF", "no_such_key:1");
    // A key given twice is refused, not silently overwritten.
    expect_refused({{"MEMTRAIL_ALLOC_CONF", "max_split_size_mb:64,max_split_size_mb:128"}},
                   "MEMTRAIL_ALLOC_CONF: bad allocator configuration");
    EXPECT_EQ(read_with({{"MEMTRAIL_ALLOC_CONF", "max_split_size_mb:64"}}).allocator.max_split_size,
              64ull << 20);
}

// The attach endpoint is on unless MEMTRAIL_LIVE turns it off.
TEST_F(environment, live_endpoint_switch) {
    EXPECT_TRUE(read_environment().live);
    EXPECT_FALSE(read_with({{"MEMTRAIL_LIVE", "off"}}).live);
    EXPECT_FALSE(read_with({{"MEMTRAIL_LIVE", "0"}}).live);
    EXPECT_TRUE(read_with({{"MEMTRAIL_LIVE", "1"}}).live);
    for (const char* bad : {"yes", "", "ON", "2"}) {
        expect_refused("MEMTRAIL_LIVE", bad);
    }
}

// 0 means the default, as max_entries 0 does in memtrail_record_memory_history.
TEST_F(environment, max_entries_zero_means_the_default) {
    EXPECT_EQ(read_with({{"MEMTRAIL_MAX_ENTRIES", "0"}}).history.max_entries, default_max_entries);
    EXPECT_EQ(read_with({{"MEMTRAIL_MAX_ENTRIES", "5"}}).history.max_entries, 5u);
    for (const char* bad : {"-1", "many", "1e6", ""}) {
        expect_refused("MEMTRAIL_MAX_ENTRIES", bad);
    }
}

TEST_F(environment, faults_for_the_simulated_device) {
    const environment_settings nth =
        read_with({{"MEMTRAIL_DEVICE", "sim"}, {"MEMTRAIL_SIM_FAIL_NTH", "3"}});
    EXPECT_EQ(nth.fail_nth_allocation, 3u);
    const environment_settings rate =
        read_with({{"MEMTRAIL_DEVICE", "sim"}, {"MEMTRAIL_SIM_FAIL_RATE", "0.25:7"}});
    EXPECT_EQ(rate.failure_rate, 0.25);
    EXPECT_EQ(rate.failure_seed, 7u);
    EXPECT_EQ(read_with({{"MEMTRAIL_DEVICE", "sim"}, {"MEMTRAIL_SIM_FAIL_RATE", "1"}}).failure_seed,
              1u);
    for (const char* bad : {"nan", "1.5", "-0.1", "0.5:", "0.5:x", ":3", "inf"}) {
        expect_refused({{"MEMTRAIL_DEVICE", "sim"}, {"MEMTRAIL_SIM_FAIL_RATE", bad}},
                       "MEMTRAIL_SIM_FAIL_RATE");
    }
    for (const char* bad : {"-1", "x", "1.5", ""}) {
        expect_refused({{"MEMTRAIL_DEVICE", "sim"}, {"MEMTRAIL_SIM_FAIL_NTH", bad}},
                       "MEMTRAIL_SIM_FAIL_NTH");
    }
    // A real device cannot be made to fail: asking for it is an error, not a silent no-op.
    expect_refused({{"MEMTRAIL_SIM_FAIL_NTH", "1"}}, "MEMTRAIL_DEVICE=sim");
    expect_refused({{"MEMTRAIL_SIM_FAIL_RATE", "0.5"}}, "MEMTRAIL_DEVICE=sim");
}

// The mode to leave on: every event, allocations' stacks, frees' not (PyTorch's context alloc).
TEST_F(environment, production_records_every_event_and_the_stacks_of_allocations) {
    const environment_settings s =
        read_with({{"MEMTRAIL_RECORD", "production"}, {"MEMTRAIL_STACKS", "all"}});
    EXPECT_EQ(s.history.enabled, record_mode::all);
    EXPECT_EQ(s.history.context, context_mode::alloc);
    EXPECT_EQ(s.history.stacks, stack_source::all);
    EXPECT_EQ(s.history.max_entries, default_max_entries);  // bounded
    EXPECT_EQ(read_with({{"MEMTRAIL_RECORD", "all"}}).history.context, context_mode::all);
}

TEST_F(environment, every_other_bad_value_names_its_variable) {
    expect_refused("MEMTRAIL_RECORD", "yes");
    expect_refused("MEMTRAIL_STACKS", "java");
    expect_refused("MEMTRAIL_UNWINDER", "gdb");
    // The Python frame reader's, core's and the interposer's are refused here too, where they
    // used to be read (and, for MEMTRAIL_PYTHON_FRAMES, a bad one silently meant api).
    expect_refused("MEMTRAIL_PYTHON_FRAMES", "fast");
    expect_refused("MEMTRAIL_DEVICE_LOCK_BIAS", "sometimes");
    expect_refused("MEMTRAIL_MODE", "intercept");
}

// The values other parts receive instead of reading the environment themselves.
TEST_F(environment, core_interposer_and_python_frames_receive_their_values) {
    const environment_settings defaults = read_environment();
    EXPECT_TRUE(defaults.allocator.device_lock.biased);
    EXPECT_EQ(defaults.mode, interpose_mode::cache);
    EXPECT_EQ(defaults.exit_dump_pattern, "");
    EXPECT_EQ(defaults.python_frames, python_frames_source::direct);
    const environment_settings set = read_with({{"MEMTRAIL_DEVICE_LOCK_BIAS", "off"},
                                                {"MEMTRAIL_MODE", "observe"},
                                                {"MEMTRAIL_EXIT_DUMP", "run-%p.memtrail"},
                                                {"MEMTRAIL_PYTHON_FRAMES", "verify"}});
    EXPECT_FALSE(set.allocator.device_lock.biased);
    EXPECT_EQ(set.mode, interpose_mode::observe);
    EXPECT_EQ(set.exit_dump_pattern, "run-%p.memtrail");
    EXPECT_EQ(set.python_frames, python_frames_source::verify);
    EXPECT_EQ(read_with({{"MEMTRAIL_PYTHON_FRAMES", "api"}}).python_frames,
              python_frames_source::api);
    // The allocator settings, given too, keep the lock's.
    const environment_settings both = read_with(
        {{"MEMTRAIL_DEVICE_LOCK_BIAS", "off"}, {"MEMTRAIL_ALLOC_CONF", "max_split_size_mb:64"}});
    EXPECT_FALSE(both.allocator.device_lock.biased);
    EXPECT_EQ(both.allocator.max_split_size, 64ull << 20);
}

// --- a rank of a job: its launcher's variables ------------------------------------------

TEST_F(environment, the_launchers_variables_give_the_job_identity) {
    const environment_settings none = read_with({});
    EXPECT_FALSE(none.job.known());
    const environment_settings rank = read_with({{"RANK", "3"},
                                                 {"LOCAL_RANK", "1"},
                                                 {"WORLD_SIZE", "8"},
                                                 {"TORCHELASTIC_RUN_ID", "job42"},
                                                 {"SLURM_JOB_ID", "777"}});
    EXPECT_EQ(rank.job.rank, 3);
    EXPECT_EQ(rank.job.local_rank, 1);
    EXPECT_EQ(rank.job.world_size, 8);
    EXPECT_EQ(rank.job.job_id, "job42");
    // torchrun's "none" (no --rdzv-id) names no job: Slurm's id is taken then.
    EXPECT_EQ(read_with({{"TORCHELASTIC_RUN_ID", "none"}, {"SLURM_JOB_ID", "777"}}).job.job_id,
              "777");
    EXPECT_EQ(read_with({{"TORCHELASTIC_RUN_ID", "none"}}).job.job_id, "");
    for (const char* bad : {"-1", "one", "1.5"}) {
        expect_refused("RANK", bad);
        expect_refused("LOCAL_RANK", bad);
        expect_refused("WORLD_SIZE", bad);
    }
}

// memtrail run's default name, inherited by every rank of torchrun, gets the rank: the ranks'
// files were told apart by pid only.
TEST_F(environment, the_default_run_dump_is_named_by_rank_where_there_is_one) {
    const std::string default_dump = "memtrail-%p.memtrail";
    EXPECT_EQ(read_with({{"MEMTRAIL_EXIT_DUMP", default_dump}}).exit_dump_pattern, default_dump);
    const environment_settings ranked =
        read_with({{"MEMTRAIL_EXIT_DUMP", default_dump},
                   {"MEMTRAIL_SIGNAL_DUMP", "memtrail-%p-signal-%t.memtrail"},
                   {"MEMTRAIL_OOM_DUMP", "memtrail-%p-oom-%t.memtrail"},
                   {"RANK", "2"}});
    EXPECT_EQ(ranked.exit_dump_pattern, "memtrail-rank%r-%p.memtrail");
    EXPECT_EQ(ranked.signal_dump_pattern, "memtrail-rank%r-%p-signal-%t.memtrail");
    EXPECT_EQ(ranked.oom_dump_pattern, "memtrail-rank%r-%p-oom-%t.memtrail");
    // A name the user chose stays as given.
    EXPECT_EQ(
        read_with({{"MEMTRAIL_EXIT_DUMP", "mine-%p.memtrail"}, {"RANK", "2"}}).exit_dump_pattern,
        "mine-%p.memtrail");
}

TEST(job_placeholders, name_files_by_rank_local_rank_and_job) {
    job_identity job;
    job.rank = 3;
    job.local_rank = 1;
    job.job_id = "job42";
    EXPECT_EQ(expand_job_placeholders("snap-%j-r%r-l%l-%p-%d-%t-%%r-%x.memtrail", job),
              "snap-job42-r3-l1-%p-%d-%t-%%r-%x.memtrail");
    // Unset: nothing.
    EXPECT_EQ(expand_job_placeholders("snap-%j-r%r-l%l.memtrail", job_identity{}),
              "snap--r-l.memtrail");
}

// --- allocator settings: memtrail's, then PyTorch's as c10 reads them ---------------------

// PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True was dropped: memtrail read only its own.
TEST_F(environment, pytorch_cuda_alloc_conf_is_honoured) {
    const environment_settings s =
        read_with({{"PYTORCH_CUDA_ALLOC_CONF", "expandable_segments:True"}});
    EXPECT_TRUE(s.allocator.expandable_segments);
    EXPECT_EQ(s.allocator.source, "expandable_segments:True");
    EXPECT_EQ(s.allocator_origin, "PYTORCH_CUDA_ALLOC_CONF");
    EXPECT_EQ(s.allocator_conflict, "");
    const environment_settings none = read_with({});
    EXPECT_FALSE(none.allocator.expandable_segments);
    EXPECT_EQ(none.allocator_origin, "");
}

TEST_F(environment, pytorch_alloc_conf_wins_over_the_older_name_as_in_pytorch) {
    const environment_settings s =
        read_with({{"PYTORCH_ALLOC_CONF", "max_split_size_mb:64"},
                   {"PYTORCH_CUDA_ALLOC_CONF", "expandable_segments:True"}});
    EXPECT_EQ(s.allocator.max_split_size, 64ull << 20);
    EXPECT_FALSE(s.allocator.expandable_segments);
    EXPECT_EQ(s.allocator_origin, "PYTORCH_ALLOC_CONF");
    EXPECT_EQ(s.allocator_conflict,
              "memtrail: allocator settings from PYTORCH_ALLOC_CONF=\"max_split_size_mb:64\"; "
              "not used: PYTORCH_CUDA_ALLOC_CONF=\"expandable_segments:True\"");
}

TEST_F(environment, memtrail_alloc_conf_wins_and_the_conflict_names_every_value) {
    const environment_settings s = read_with({{"MEMTRAIL_ALLOC_CONF", "max_split_size_mb:64"},
                                              {"PYTORCH_ALLOC_CONF", "expandable_segments:True"},
                                              {"PYTORCH_CUDA_ALLOC_CONF", "max_split_size_mb:64"}});
    EXPECT_EQ(s.allocator.max_split_size, 64ull << 20);
    EXPECT_FALSE(s.allocator.expandable_segments);
    EXPECT_EQ(s.allocator_origin, "MEMTRAIL_ALLOC_CONF");
    // The variable that agrees is not a conflict.
    EXPECT_EQ(s.allocator_conflict,
              "memtrail: allocator settings from MEMTRAIL_ALLOC_CONF=\"max_split_size_mb:64\"; "
              "not used: PYTORCH_ALLOC_CONF=\"expandable_segments:True\"");
    const environment_settings same =
        read_with({{"MEMTRAIL_ALLOC_CONF", "max_split_size_mb:64"},
                   {"PYTORCH_CUDA_ALLOC_CONF", "max_split_size_mb:64"}});
    EXPECT_EQ(same.allocator_conflict, "");
}

TEST_F(environment, a_bad_pytorch_setting_names_its_variable) {
    expect_refused({{"PYTORCH_CUDA_ALLOC_CONF", "max_split_size_mb:1"}},
                   "PYTORCH_CUDA_ALLOC_CONF: bad allocator configuration");
    expect_refused({{"PYTORCH_ALLOC_CONF", "no_such_key:1"}},
                   "PYTORCH_ALLOC_CONF: bad allocator configuration");
    // Only the settings in force are read: a variable that does not win is not parsed.
    EXPECT_EQ(read_with({{"MEMTRAIL_ALLOC_CONF", "max_split_size_mb:64"},
                         {"PYTORCH_CUDA_ALLOC_CONF", "no_such_key:1"}})
                  .allocator.max_split_size,
              64ull << 20);
}

// --- the docs list exactly the table's variables ---------------------------------------------

// The table's MEMTRAIL_ variables (memtrail.h and the README name those; PyTorch's are PyTorch's).
std::set<std::string> memtrail_names() {
    std::set<std::string> names;
    for (const environment_option& option : environment_options()) {
        if (option.name.starts_with("MEMTRAIL_")) {
            names.insert(std::string(option.name));
        }
    }
    return names;
}

TEST(environment_docs, settings_md_has_the_tables_rows) {
    std::set<std::string> documented;
    std::set<std::string> table;
    for (const environment_option& option : environment_options()) {
        table.insert(std::string(option.name));
    }
    for (const auto& row :
         test::markdown_table(test::source_file("docs/settings.md"), "variable")) {
        ASSERT_EQ(row.size(), 5u) << row[0];
        EXPECT_TRUE(documented.insert(row[0]).second) << row[0] << " is documented twice";
        for (const environment_option& option : environment_options()) {
            if (option.name == row[0]) {
                EXPECT_EQ(row[1], option.default_value) << row[0];
                EXPECT_EQ(row[2], option.accepted) << row[0];
                EXPECT_EQ(row[3], option.used_by) << row[0];
                EXPECT_TRUE(row[4].starts_with(option.meaning))
                    << row[0] << ": the docs' meaning \"" << row[4]
                    << "\" does not start with the table's \"" << option.meaning << "\"";
            }
        }
    }
    EXPECT_EQ(documented, table) << "docs/settings.md's table";
}

TEST(environment_docs, memtrail_h_lists_every_variable) {
    // The header's opening comment, up to its include guard.
    const std::string header = test::between(
        test::source_file("librecorder/include/memtrail/memtrail.h"), "/*", "#ifndef");
    EXPECT_EQ(test::variable_names(header), memtrail_names()) << "memtrail.h's opening comment";
}

TEST(environment_docs, recorder_readme_lists_every_variable) {
    const std::string section =
        test::between(test::source_file("librecorder/README.md"), "## Environment", "\n## ");
    EXPECT_EQ(test::variable_names(section), memtrail_names())
        << "librecorder/README.md's Environment";
}

// --- one reader of the environment -------------------------------------------------------

// Every product source (not tests, benchmarks, fuzzers or samples) that calls getenv, other than
// the settings table's reader.
TEST(environment_reader, no_product_source_but_the_table_calls_getenv) {
    namespace fs = std::filesystem;
    const fs::path root(MEMTRAIL_SOURCE_DIR);
    const std::set<std::string> allowed = {
        "librecorder/src/environment.cpp",  // the table's reader
        // `memtrail run` extends LD_PRELOAD and PYTHONPATH for the program: not settings.
        "cli/src/command_run.cpp",
    };
    const std::set<std::string> not_product = {"tests", "bench",   "fuzz", "samples",
                                               "build", "scripts", "docs"};
    std::vector<std::string> readers;
    for (const fs::directory_entry& top : fs::directory_iterator(root)) {
        const std::string name = top.path().filename().string();
        if (!top.is_directory() || name.starts_with(".") || not_product.contains(name)) {
            continue;
        }
        for (const fs::directory_entry& file : fs::recursive_directory_iterator(top.path())) {
            const std::string extension = file.path().extension().string();
            if (!file.is_regular_file() ||
                !std::set<std::string>{".cpp", ".hpp", ".h", ".c", ".cc"}.contains(extension)) {
                continue;
            }
            const std::string relative = fs::relative(file.path(), root).string();
            const std::string text = test::source_file(relative);
            if (text.find("getenv(") != std::string::npos && !allowed.contains(relative)) {
                readers.push_back(relative);
            }
        }
    }
    EXPECT_TRUE(readers.empty()) << "these read the environment themselves; add a row to the "
                                    "settings table (librecorder/src/environment.cpp) "
                                    "and pass the value in: "
                                 << ::testing::PrintToString(readers);
}

}  // namespace
}  // namespace memtrail::recorder::librecorder

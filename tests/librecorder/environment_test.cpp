// librecorder's table of environment variables: every bad value is refused with the variable's
// name, what is accepted is read as documented, and the docs list exactly the table's variables.

#include <gtest/gtest.h>

#include <csignal>
#include <cstdlib>
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

TEST_F(environment, every_other_bad_value_names_its_variable) {
    expect_refused("MEMTRAIL_RECORD", "yes");
    expect_refused("MEMTRAIL_STACKS", "java");
    expect_refused("MEMTRAIL_UNWINDER", "gdb");
}

// --- the docs list exactly the table's variables ---------------------------------------------

std::set<std::string> table_names() {
    std::set<std::string> names;
    for (const environment_option& option : environment_options()) {
        names.insert(std::string(option.name));
    }
    return names;
}

TEST(environment_docs, recorder_md_lists_every_variable_as_the_table_does) {
    std::set<std::string> documented;
    for (const auto& row :
         test::markdown_table(test::source_file("docs/recorder.md"), "variable")) {
        ASSERT_EQ(row.size(), 4u) << row[0];
        EXPECT_TRUE(documented.insert(row[0]).second) << row[0] << " is documented twice";
        for (const environment_option& option : environment_options()) {
            if (option.name == row[0]) {
                EXPECT_EQ(row[1], option.default_value) << row[0];
                EXPECT_EQ(row[2], option.accepted) << row[0];
            }
        }
    }
    EXPECT_EQ(documented, table_names()) << "docs/recorder.md's environment table";
}

TEST(environment_docs, memtrail_h_lists_every_variable) {
    // The header's opening comment, up to its include guard.
    const std::string header = test::between(
        test::source_file("librecorder/include/memtrail/memtrail.h"), "/*", "#ifndef");
    EXPECT_EQ(test::variable_names(header), table_names()) << "memtrail.h's opening comment";
}

TEST(environment_docs, recorder_readme_lists_every_variable) {
    const std::string section =
        test::between(test::source_file("librecorder/README.md"), "## Environment", "\n## ");
    EXPECT_EQ(test::variable_names(section), table_names())
        << "librecorder/README.md's Environment";
}

}  // namespace
}  // namespace memtrail::recorder::librecorder

// Every recorded PyTorch trace must replay to exact parity: trace, final segments, counters.

#include <gtest/gtest.h>

#include <filesystem>
#include <regex>
#include <sstream>

#include "doc_text.hpp"
#include "memtrail/replay/replay.hpp"
#include "memtrail/replay/trace_metadata.hpp"
#include "memtrail/snapshot/torch_pickle.hpp"

namespace memtrail::replay {
namespace {

namespace fs = std::filesystem;

std::vector<fs::path> recorded_traces() {
    std::vector<fs::path> found;
    std::stringstream dirs(MEMTRAIL_TRACE_DIRS);
    std::string dir;
    while (std::getline(dirs, dir, ':')) {
        if (!fs::is_directory(dir)) {
            continue;
        }
        for (const auto& entry : fs::directory_iterator(dir)) {
            if (entry.path().extension() == ".pickle" &&
                fs::exists(fs::path(entry.path()).replace_extension(".json"))) {
                found.push_back(entry.path());
            }
        }
    }
    std::sort(found.begin(), found.end());
    return found;
}

// The device a trace was recorded on: a rank's trace is its own device's (rank 1: device 1).
int traced_device(const snapshot::snapshot& original) {
    for (const auto& trace : original.traces) {
        if (!trace.entries.empty()) {
            return trace.device;
        }
    }
    return 0;
}

class Parity : public ::testing::TestWithParam<fs::path> {};

TEST_P(Parity, ReplayMatchesPyTorchExactly) {
    const fs::path trace = GetParam();
    const trace_metadata meta = read_trace_metadata(fs::path(trace).replace_extension(".json"));
    const snapshot::snapshot original = snapshot::read_torch_pickle(trace);
    replay_options options;
    options.device = traced_device(original);
    options.config = allocator_config::parse(meta.conf);
    options.device_memory = meta.device_total;
    options.memory_fraction = meta.fraction;
    options.expected_stats = &meta.stats;
    const replay_result result = replay_trace(original, options);
    ASSERT_GT(result.allocations, 0u) << "nothing replayed on device " << options.device;
    const parity_report report =
        compare_with_original(original, result, &meta.stats, options.device);
    EXPECT_TRUE(report.trace_equal) << report.first_difference;
    EXPECT_TRUE(report.segments_equal) << report.first_difference;
    EXPECT_TRUE(report.stats_equal) << report.first_difference;
    EXPECT_EQ(result.unmatched_frees, 0u);
}

TEST(ParityTraces, ADifferentConfigurationIsDetected) {
    // The comparison must be able to fail: other rounding gives other blocks.
    for (const fs::path& trace : recorded_traces()) {
        if (trace.stem() != "transformer__default") {
            continue;
        }
        const trace_metadata meta = read_trace_metadata(fs::path(trace).replace_extension(".json"));
        const snapshot::snapshot original = snapshot::read_torch_pickle(trace);
        replay_options options;
        options.config = allocator_config::parse("roundup_power2_divisions:16");
        options.device_memory = meta.device_total;
        options.reuse_trace_addresses = false;
        const replay_result result = replay_trace(original, options);
        const parity_report report = compare_with_original(original, result, &meta.stats);
        EXPECT_FALSE(report.ok());
        EXPECT_FALSE(report.first_difference.empty());
        return;
    }
    FAIL() << "transformer__default.pickle not found";
}

TEST(ParityTraces, OtherSettingsWithTheTracesAddressesStillReplay) {
    // Queued trace addresses that no longer fit are skipped, never handed out twice.
    for (const fs::path& trace : recorded_traces()) {
        if (trace.parent_path().filename() != "pytorch") {
            continue;
        }
        const snapshot::snapshot original = snapshot::read_torch_pickle(trace);
        for (const char* conf :
             {"expandable_segments:True", "max_split_size_mb:20", "roundup_power2_divisions:16"}) {
            replay_options options;
            options.config = allocator_config::parse(conf);
            const replay_result result = replay_trace(original, options);
            EXPECT_GT(result.allocations, 0u) << trace << " " << conf;
            EXPECT_EQ(result.unmatched_frees, 0u) << trace << " " << conf;
        }
    }
}

TEST(ParityTraces, AreThere) {
    // The two anchors at least; a missing directory must not make the suite pass vacuously.
    EXPECT_GE(recorded_traces().size(), 2u);
}

// The README says how many traces this suite replays: it must stay the number replayed.
TEST(ParityTraces, TheReadmeCountsThem) {
    std::stringstream dirs(MEMTRAIL_TRACE_DIRS);
    for (std::string dir; std::getline(dirs, dir, ':');) {
        if (!fs::is_directory(dir)) {
            GTEST_SKIP() << dir << " is missing: the README counts the traces with it";
        }
    }
    const std::string readme = memtrail::test::source_file("README.md");
    std::smatch count;
    ASSERT_TRUE(std::regex_search(readme, count, std::regex("replays ([0-9]+) allocator traces")))
        << "README.md no longer says how many traces tests/replay replays";
    EXPECT_EQ(std::stoul(count[1].str()), recorded_traces().size());
}

INSTANTIATE_TEST_SUITE_P(Recorded, Parity, ::testing::ValuesIn(recorded_traces()),
                         [](const ::testing::TestParamInfo<fs::path>& param) {
                             // The anchors and the recorded traces share names: keep the folder in
                             // the test name.
                             std::string name = param.param.parent_path().filename().string() +
                                                "_" + param.param.stem().string();
                             for (char& c : name) {
                                 if (!std::isalnum(static_cast<unsigned char>(c))) {
                                     c = '_';
                                 }
                             }
                             return name;
                         });

}  // namespace
}  // namespace memtrail::replay

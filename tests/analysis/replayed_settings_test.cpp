// Traces under other allocator settings, produced by replaying the PyTorch anchors through
// memtrail's allocator (memtrail_replay, exact PyTorch parity): expandable segments, oversize
// blocks, power-of-two rounding. The model must end in the replay's own segments and recompute
// the replay's counters from its trace alone.

#include <gtest/gtest.h>

#include <filesystem>
#include <memory>
#include <ostream>
#include <string>

#include "memtrail/analysis/device_model.hpp"
#include "memtrail/replay/replay.hpp"
#include "memtrail/rules/statistics.hpp"
#include "memtrail/snapshot/load.hpp"
#include "test_name.hpp"

namespace memtrail::analysis {
namespace {

namespace fs = std::filesystem;

struct setting_case {
    const char* anchor;
    const char* conf;
};

// "transformer_default_max_split_size_mb_64"
std::string name_of(const setting_case& c) {
    return testing::test_name_part(fs::path(c.anchor).stem().string()) + "_" +
           testing::conf_name_part(c.conf);
}

// gtest lists the parameter beside the test's name; without this, as its raw bytes.
void PrintTo(const setting_case& c, std::ostream* out) {
    *out << c.anchor << " under \"" << c.conf << "\"";
}

class replayed_settings : public ::testing::TestWithParam<setting_case> {};

TEST_P(replayed_settings, model_recomputes_the_replay) {
    const fs::path path = fs::path(MEMTRAIL_SHARED_DIR) / "anchors" / "pytorch" / GetParam().anchor;
    if (!fs::exists(path)) {
        GTEST_SKIP() << path << " is not there";
    }
    const snapshot::loaded_snapshot loaded = snapshot::load_snapshot(path);
    replay::replay_options options;
    options.config = allocator_config::parse(GetParam().conf);
    options.reuse_trace_addresses = false;
    const replay::replay_result result = replay::replay_trace(*loaded.snapshot, options);
    ASSERT_EQ(result.ooms, 0u);

    auto replayed = std::make_shared<snapshot::snapshot>(result.final_state);
    const device_model model = device_model::build(replayed, 0);
    EXPECT_EQ(model.report().anomalies, 0u);
    EXPECT_TRUE(model.report().matches_final_segments) << model.report().first_difference;
    const auto got = to_memory_stats(model.state_after(model.event_count()).stats);
    for (const auto& [name, value] : result.stats) {
        if (name.starts_with("num_alloc_retries") || name.starts_with("num_sync_all_streams")) {
            continue;
        }
        const auto it = got.find(name);
        ASSERT_NE(it, got.end()) << name;
        EXPECT_EQ(it->second, value) << name;
    }
    EXPECT_EQ(model.values(series::reserved)[model.peak_position(series::reserved)],
              result.peak_reserved);
    EXPECT_EQ(model.values(series::allocated)[model.peak_position(series::allocated)],
              result.peak_allocated);
}

INSTANTIATE_TEST_SUITE_P(
    anchors, replayed_settings,
    ::testing::Values(setting_case{"transformer__default.pickle", "expandable_segments:True"},
                      setting_case{"streams__default.pickle", "expandable_segments:True"},
                      setting_case{"transformer__default.pickle", "max_split_size_mb:64"},
                      setting_case{"transformer__default.pickle", "roundup_power2_divisions:4"},
                      setting_case{"transformer__default.pickle",
                                   "roundup_power2_divisions:[256:8,>:2]"},
                      setting_case{"streams__default.pickle", "max_split_size_mb:40"}),
    [](const auto& test) { return name_of(test.param); });

}  // namespace
}  // namespace memtrail::analysis

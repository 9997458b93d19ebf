// Random histories made by memtrail's own allocator, with cross-stream frees, cache releases
// and out-of-memory failures, must replay to themselves exactly: a property test of the
// request recovery that the PyTorch traces exercise less often.

#include <gtest/gtest.h>

#include <ostream>
#include <string>

#include "memtrail/replay/replay.hpp"
#include "memtrail/replay/synthetic_trace.hpp"
#include "memtrail/snapshot/torch_pickle.hpp"
#include "test_name.hpp"

namespace memtrail::replay {
namespace {

struct case_config {
    const char* conf;
    uint64_t device_memory;
    // An explicit empty_cache right before an allocation that needs a new segment on a full
    // device looks exactly like that allocation's own release-and-retry; the replay decides
    // from the allocator's state and can be wrong there, so the full-device case leaves
    // empty_cache out (docs/replay.md).
    bool empty_cache_calls = true;
};

// "max_split_size_mb_64_2GiB_no_empty_cache"
std::string name_of(const case_config& c) {
    return testing::conf_name_part(c.conf) + "_" + std::to_string(c.device_memory >> 30) + "GiB" +
           (c.empty_cache_calls ? "" : "_no_empty_cache");
}

// gtest lists the parameter beside the test's name; without this, as its raw bytes.
void PrintTo(const case_config& c, std::ostream* out) {
    *out << "conf \"" << c.conf << "\", " << (c.device_memory >> 30) << " GiB, empty_cache "
         << (c.empty_cache_calls ? "called" : "never called");
}

class SelfParity : public ::testing::TestWithParam<case_config> {};

TEST_P(SelfParity, RandomHistoriesReplayExactly) {
    for (uint64_t seed = 1; seed <= 8; ++seed) {
        synthetic_options options;
        options.seed = seed;
        options.operations = 30000;
        options.conf = GetParam().conf;
        options.device_memory = GetParam().device_memory;
        options.empty_cache_calls = GetParam().empty_cache_calls;
        // Through the pickle writer and reader, as a PyTorch trace would arrive.
        const snapshot::snapshot history = snapshot::read_torch_pickle(
            snapshot::write_torch_pickle(make_synthetic_history(options)));
        ASSERT_GT(history.find_trace(0)->entries.size(), options.operations);
        auto expected = make_synthetic_history(options).stats.at(0);
        // An empty_cache that releases nothing leaves no trace entry, yet counts a
        // synchronization: the one counter a trace cannot reproduce.
        expected.erase("num_sync_all_streams");
        replay_options replay;
        replay.config = allocator_config::parse(options.conf);
        replay.device_memory = options.device_memory;
        replay.expected_stats = &expected;
        const replay_result result = replay_trace(history, replay);
        const parity_report report = compare_with_original(history, result, &expected);
        ASSERT_TRUE(report.ok()) << "seed " << seed << ": " << report.first_difference;
    }
}

INSTANTIATE_TEST_SUITE_P(Configs, SelfParity,
                         ::testing::Values(case_config{"", 16ull << 30},
                                           case_config{"", 2ull << 30, false},  // OOMs and retries
                                           case_config{"max_split_size_mb:64", 4ull << 30},
                                           case_config{"max_split_size_mb:64", 2ull << 30, false},
                                           case_config{"expandable_segments:True", 16ull << 30},
                                           case_config{"roundup_power2_divisions:8", 16ull << 30}),
                         [](const ::testing::TestParamInfo<case_config>& param) {
                             return name_of(param.param);
                         });

}  // namespace
}  // namespace memtrail::replay

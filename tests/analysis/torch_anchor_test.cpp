// The real PyTorch traces in shared/anchors: replaying each trace from its empty start must end
// in the snapshot's own segments, the per-segment totals must equal what a python script reads
// straight from the pickle's segment list, and the counters recomputed from the trace must equal
// the torch.cuda.memory_stats() recorded with it.

#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <map>
#include <sstream>
#include <string>

#include "memtrail/analysis/device_model.hpp"
#include "memtrail/analysis/segment_summary.hpp"
#include "memtrail/rules/statistics.hpp"
#include "memtrail/snapshot/load.hpp"

namespace memtrail::analysis {
namespace {

namespace fs = std::filesystem;

struct expectations {
    std::vector<std::vector<uint64_t>> segments;  // address total allocated pending free
                                                  // largest_free requested blocks
    std::map<std::string, int64_t> stats;
};

expectations run_script(const fs::path& pickle) {
    const std::string command =
        "python3 " MEMTRAIL_ANALYSIS_TESTS "/anchor_expectations.py '" + pickle.string() + "'";
    FILE* pipe = popen(command.c_str(), "r");
    if (pipe == nullptr) {
        throw std::runtime_error("cannot run " + command);
    }
    std::string output;
    char buffer[4096];
    size_t n = 0;
    while ((n = fread(buffer, 1, sizeof buffer, pipe)) > 0) {
        output.append(buffer, n);
    }
    if (pclose(pipe) != 0) {
        throw std::runtime_error(command + " failed");
    }
    expectations out;
    std::istringstream lines(output);
    std::string line;
    while (std::getline(lines, line)) {
        std::istringstream words(line);
        std::string kind;
        words >> kind;
        if (kind == "segment") {
            std::vector<uint64_t> values(8);
            for (auto& v : values) {
                words >> v;
            }
            out.segments.push_back(values);
        } else if (kind == "stat") {
            std::string name;
            int64_t value = 0;
            words >> name >> value;
            out.stats[name] = value;
        }
    }
    return out;
}

std::vector<fs::path> anchors() {
    std::vector<fs::path> out;
    const fs::path folder = fs::path(MEMTRAIL_SHARED_DIR) / "anchors" / "pytorch";
    if (fs::exists(folder)) {
        for (const auto& item : fs::directory_iterator(folder)) {
            if (item.path().extension() == ".pickle") {
                out.push_back(item.path());
            }
        }
    }
    std::sort(out.begin(), out.end());
    return out;
}

class torch_anchor : public ::testing::TestWithParam<fs::path> {};

TEST_P(torch_anchor, replay_ends_in_the_snapshot_segments_with_the_same_totals) {
    const expectations want = run_script(GetParam());
    const snapshot::loaded_snapshot loaded = snapshot::load_snapshot(GetParam());
    EXPECT_EQ(loaded.kind, snapshot::file_kind::torch_pickle);
    const device_model model = device_model::build(loaded.snapshot, 0);
    EXPECT_EQ(model.report().anomalies, 0u);
    EXPECT_TRUE(model.report().matches_final_segments) << model.report().first_difference;

    const segment_summary summary = summarize_segments(model.state_after(model.event_count()));
    ASSERT_EQ(summary.segments.size(), want.segments.size());
    for (size_t i = 0; i < want.segments.size(); ++i) {
        const segment_usage& got = summary.segments[i];
        const std::vector<uint64_t> got_values = {
            got.address, got.total_size,   got.allocated, got.pending_free,
            got.free,    got.largest_free, got.requested, got.blocks};
        EXPECT_EQ(got_values, want.segments[i]) << "segment " << i;
    }
}

TEST_P(torch_anchor, counters_recomputed_from_the_trace_equal_memory_stats) {
    const expectations want = run_script(GetParam());
    if (want.stats.empty()) {
        GTEST_SKIP() << "no memory_stats saved beside " << GetParam();
    }
    const device_model model = device_model::build(snapshot::load_snapshot(GetParam()).snapshot, 0);
    const auto got = to_memory_stats(model.state_after(model.event_count()).stats);
    // What a trace determines: every counter of blocks, segments and bytes. Retries and
    // stream synchronisations leave no entry.
    size_t compared = 0;
    for (const auto& [name, value] : want.stats) {
        if (name.starts_with("num_alloc_retries") || name.starts_with("num_sync_all_streams")) {
            continue;
        }
        const auto it = got.find(name);
        ASSERT_NE(it, got.end()) << name;
        EXPECT_EQ(it->second, value) << name;
        ++compared;
    }
    EXPECT_GT(compared, 80u);
}

INSTANTIATE_TEST_SUITE_P(pytorch, torch_anchor, ::testing::ValuesIn(anchors()),
                         [](const auto& test) { return test.param.stem().string(); });

}  // namespace
}  // namespace memtrail::analysis

// summarize_rank from a model the caller built (as `memtrail report` does, indexing a file once)
// is the summary summarize_rank makes from the snapshot alone, and summaries add up as the
// overviews of the same traces do, on real traces.

#include <gtest/gtest.h>

#include <filesystem>
#include <stdexcept>
#include <string>

#include "memtrail/analysis/categories.hpp"
#include "memtrail/analysis/device_model.hpp"
#include "memtrail/analysis/frame_filter.hpp"
#include "memtrail/analysis/rank_summary.hpp"
#include "memtrail/snapshot/load.hpp"

namespace memtrail::analysis {
namespace {

namespace fs = std::filesystem;

std::shared_ptr<const snapshot::snapshot> trace(const char* name) {
    const fs::path path = fs::path(MEMTRAIL_UNPACKED_TRACES) / name;
    // Unpacked from tests/data at configure time: missing means the build is broken.
    if (!fs::exists(path)) {
        throw std::runtime_error(path.string() + " is missing");
    }
    return snapshot::load_snapshot(path).snapshot;
}

void expect_same(const rank_summary& a, const rank_summary& b) {
    EXPECT_EQ(a.path, b.path);
    EXPECT_EQ(a.identity.rank, b.identity.rank);
    EXPECT_EQ(a.identity.device, b.identity.device);
    EXPECT_EQ(a.entries, b.entries);
    EXPECT_EQ(a.dropped, b.dropped);
    EXPECT_EQ(a.peak_allocated.position, b.peak_allocated.position);
    EXPECT_EQ(a.peak_allocated.bytes, b.peak_allocated.bytes);
    EXPECT_EQ(a.peak_reserved.bytes, b.peak_reserved.bytes);
    EXPECT_EQ(a.end_allocated, b.end_allocated);
    EXPECT_EQ(a.oom_count, b.oom_count);
    EXPECT_EQ(a.job_kind, b.job_kind);
    EXPECT_EQ(a.steps, b.steps);
    EXPECT_EQ(a.categories_at_peak, b.categories_at_peak);
    EXPECT_EQ(a.fragmentation_at_peak_reserved, b.fragmentation_at_peak_reserved);
    ASSERT_EQ(a.top_stacks.size(), b.top_stacks.size());
    for (size_t i = 0; i < a.top_stacks.size(); ++i) {
        EXPECT_EQ(a.top_stacks[i].frames, b.top_stacks[i].frames) << "top stack " << i;
    }
    EXPECT_EQ(a.stack_sketch, b.stack_sketch);
    EXPECT_EQ(a.sequence_hash, b.sequence_hash);
    EXPECT_EQ(a.curve.size(), b.curve.size());
}

TEST(summarize_rank, from_a_model_built_once_is_the_summary_of_the_snapshot) {
    for (const char* name : {"ddp__rank1.pickle", "oom_cap_fragmentation.pickle"}) {
        SCOPED_TRACE(name);
        const auto source = trace(name);
        const int device = devices_of(*source).front();
        const device_model model = device_model::build(source, device);
        ASSERT_GT(model.event_count(), 0u);
        for (const bool all_frames : {false, true}) {
            expect_same(summarize_rank(source, model, category_map::build(model), name,
                                       "torch-pickle", all_frames),
                        summarize_rank(source, device, name, "torch-pickle", all_frames));
        }
    }
}

TEST(rank_totals, add_a_summary_as_they_add_its_overview) {
    rank_totals from_summaries;
    rank_totals from_overviews;
    for (const char* name : {"ddp__rank0.pickle", "ddp__rank1.pickle"}) {
        const auto source = trace(name);
        const device_model model = device_model::build(source, devices_of(*source).front());
        add_to(from_summaries, summarize_rank(source, model.device(), name, "torch-pickle"));
        add_to(from_overviews, overview_of(model));
    }
    EXPECT_GT(from_summaries.peak_reserved, 0u);
    EXPECT_GT(from_summaries.allocations, 0);
    EXPECT_TRUE(from_summaries == from_overviews);
}

TEST(summarize_rank, refuses_a_model_of_another_snapshot) {
    const auto source = trace("ddp__rank1.pickle");
    const auto folded = with_frame_visibility(source, frame_visibility::user_frames);
    ASSERT_NE(folded.get(), source.get());
    const device_model model = device_model::build(folded, devices_of(*source).front());
    EXPECT_THROW(summarize_rank(source, model, category_map::build(model), "x", "torch-pickle"),
                 std::invalid_argument);
}

}  // namespace
}  // namespace memtrail::analysis

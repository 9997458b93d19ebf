// analyze_ranks on summaries made here: the one rank that differs among many is the only
// outlier and is explained by category and stack; ranks alike within 5% are not outliers; two
// ranks have the lower as their median; identical sequences are grouped and a departure found
// at its step; job ids split jobs; the sketches and identities tell jobs apart.

#include <gtest/gtest.h>

#include "memtrail/analysis/rank_outliers.hpp"

namespace ma = memtrail::analysis;

namespace {

constexpr uint64_t MiB = 1ull << 20;
constexpr uint64_t GiB = 1ull << 30;
constexpr size_t activation = static_cast<size_t>(ma::memory_category::activation);
constexpr size_t parameter = static_cast<size_t>(ma::memory_category::parameter);

ma::rank_summary rank_summary(int rank, uint64_t activation_bytes = 2 * GiB) {
    ma::rank_summary s;
    s.path = "/runs/job/rank" + std::to_string(rank) + ".memtrail";
    s.identity.rank = rank;
    s.identity.source = ma::identity_source::file_name;
    s.identity.producer = "memtrail 0.1.0";
    s.identity.pid = 100 + rank;
    s.identity.host = "node";
    s.categories_at_peak[parameter] = GiB;
    s.categories_at_peak[activation] = activation_bytes;
    s.peak_allocated.bytes = GiB + activation_bytes;
    s.peak_reserved.bytes = s.peak_allocated.bytes + 512 * MiB;
    s.step_source = "annotations";
    for (size_t step = 0; step < 5; ++step) {
        s.sequence.push_back({step * 100, step, 1000 + step});
    }
    s.sequence_hash = 42;
    s.stack_sketch = {1, 2, 3, 4};
    s.top_stacks.push_back(
        {7, activation_bytes, 4, ma::memory_category::activation, {"relu (f.py:1)"}});
    s.top_stacks.push_back({8, GiB, 10, ma::memory_category::parameter, {"linear (m.py:9)"}});
    return s;
}

}  // namespace

TEST(RankRanges, ConsecutiveRanksBecomeRanges) {
    std::vector<int> ranks;
    for (int r = 0; r < 1024; ++r) {
        if (r != 512) {
            ranks.push_back(r);
        }
    }
    EXPECT_EQ(ma::rank_ranges(ranks), "0-511 and 513-1023");
    EXPECT_EQ(ma::rank_ranges({0, 2, 3, 4, 9}), "0, 2-4 and 9");
    EXPECT_EQ(ma::rank_ranges({5}), "5");
    EXPECT_EQ(ma::rank_ranges({}), "");
}

TEST(AnalyzeRanks, TheOneRankThatDiffersIsTheOnlyOutlierAndIsExplained) {
    std::vector<ma::rank_summary> summaries;
    for (int r = 0; r < 64; ++r) {
        // Ranks alike but for a few MiB of rounding; rank 40 holds 1 GiB more activations.
        summaries.push_back(rank_summary(r, r == 40 ? 3 * GiB : 2 * GiB + (r % 3) * MiB));
    }
    summaries[40].sequence_hash = 43;
    summaries[40].sequence[3].hash = 7;
    summaries[40].sequence[4].hash = 8;
    const ma::ranks_analysis ranks = ma::analyze_ranks(summaries);
    ASSERT_EQ(ranks.jobs.size(), 1u);
    const ma::job_ranking& job = ranks.jobs[0];
    ASSERT_EQ(job.outliers.size(), 1u);
    const ma::outlier_explanation& e = job.outliers[0];
    EXPECT_EQ(job.job.ranks[e.member], 40);
    EXPECT_EQ(job.by_distance.front(), e.member);
    EXPECT_GT(job.standings[e.member].distance, ma::outlier_cut);
    for (size_t i = 0; i < job.standings.size(); ++i) {
        if (i != e.member) {
            EXPECT_LE(job.standings[i].distance, 1.0) << i;
        }
    }
    EXPECT_EQ(e.categories_text, "activation +1023MiB; parameter equal");
    ASSERT_FALSE(e.stacks.empty());
    EXPECT_EQ(e.stacks[0].hash, 7u);
    EXPECT_GT(e.stacks[0].change(), 0);
    // 63 ranks did the same; rank 40 departs in step 3.
    ASSERT_EQ(job.sequences.size(), 2u);
    EXPECT_EQ(job.sequences[0].ranks.size(), 63u);
    ASSERT_EQ(job.departures.size(), 1u);
    EXPECT_EQ(job.departures[0].rank, 40);
    EXPECT_TRUE(job.departures[0].by_step);
    EXPECT_EQ(job.departures[0].step, 3u);
    EXPECT_EQ(job.departures[0].first_entry, 300u);
}

TEST(AnalyzeRanks, RanksWithinFivePercentAreNoOutliers) {
    std::vector<ma::rank_summary> summaries;
    for (int r = 0; r < 8; ++r) {
        summaries.push_back(rank_summary(r, 2 * GiB + static_cast<uint64_t>(r) * 12 * MiB));
    }
    const ma::ranks_analysis ranks = ma::analyze_ranks(summaries);
    EXPECT_TRUE(ranks.jobs.at(0).outliers.empty());
    EXPECT_EQ(ranks.jobs[0].sequences.size(), 1u);
    EXPECT_TRUE(ranks.jobs[0].departures.empty());
}

TEST(AnalyzeRanks, OfTwoRanksTheLowerIsTheMedianAndTheHigherTheOutlier) {
    const std::vector<ma::rank_summary> summaries = {rank_summary(0, 4 * GiB), rank_summary(1)};
    const ma::job_ranking job = ma::analyze_ranks(summaries).jobs.at(0);
    EXPECT_EQ(job.job.ranks[job.median_member], 1);
    ASSERT_EQ(job.outliers.size(), 1u);
    EXPECT_EQ(job.job.ranks[job.outliers[0].member], 0);
    EXPECT_EQ(job.standings[job.median_member].distance, 0.0);
}

TEST(AnalyzeRanks, JobIdsSplitJobsAndRanksComeFromTheIdentity) {
    std::vector<ma::rank_summary> summaries;
    for (int r = 0; r < 6; ++r) {
        ma::rank_summary s = rank_summary(5 - r);
        s.identity.job_id = r % 2 == 0 ? "job-a" : "job-b";
        s.identity.source = ma::identity_source::snapshot;
        summaries.push_back(s);
    }
    const ma::ranks_analysis ranks = ma::analyze_ranks(summaries);
    ASSERT_EQ(ranks.jobs.size(), 2u);
    EXPECT_EQ(ranks.jobs[0].job.name, "job-a");
    EXPECT_EQ(ranks.jobs[0].job.ranks, (std::vector<int>{1, 3, 5}));
    EXPECT_EQ(ranks.jobs[1].job.ranks, (std::vector<int>{0, 2, 4}));
    EXPECT_EQ(ranks.jobs[1].job.why_not_first, "another job id (job-b, not job-a)");
}

TEST(SummaryJobs, WhatTellsTwoJobsApart) {
    const ma::rank_summary a = rank_summary(0);
    ma::rank_summary b = rank_summary(1);
    EXPECT_EQ(ma::why_not_same_job(a.identity, b.identity), std::nullopt);
    b.identity.pid = a.identity.pid;
    EXPECT_EQ(ma::why_not_same_job(a.identity, b.identity).value_or(""),
              "the same process (node, pid 100): two moments of one rank");
    b = rank_summary(1);
    b.identity.producer = "torch pickle import";
    EXPECT_NE(ma::why_not_same_job(a.identity, b.identity).value_or("").find("written by"),
              std::string::npos);
    EXPECT_EQ(ma::shared_sketch_fraction({1, 2, 3}, {1, 2, 3}), 1.0);
    EXPECT_EQ(ma::shared_sketch_fraction({1, 2, 3}, {4, 5, 6}), 0.0);
    EXPECT_EQ(ma::shared_sketch_fraction({}, {1}), std::nullopt);
    // Other code: the sketches share nothing, so two jobs though named alike.
    b = rank_summary(1);
    b.stack_sketch = {10, 11, 12, 13};
    const auto jobs = ma::group_summaries({a, b});
    ASSERT_EQ(jobs.size(), 2u);
    EXPECT_EQ(jobs[1].why_not_first, "other code: 0% of their allocation stacks are shared");
}

// Which job and rank a file is: the rank a file name names and the name's pattern, ranks of
// paths, what tells two snapshots apart, and the grouping of real PyTorch 2.11 traces of two
// jobs recorded on two H200s (tests/data/traces/jobs.tar.gz).

#include <gtest/gtest.h>

#include <filesystem>
#include <memory>

#include "memtrail/analysis/rank_jobs.hpp"
#include "memtrail/snapshot/load.hpp"

namespace memtrail::analysis {
namespace {

namespace fs = std::filesystem;

TEST(rank_in_file_name, names_the_rank_and_the_pattern_shared_by_a_jobs_ranks) {
    const auto expect = [](std::string_view name, std::optional<int> rank,
                           const std::string& pattern) {
        const rank_name found = rank_in_file_name(name);
        EXPECT_EQ(found.rank, rank) << name;
        EXPECT_EQ(found.pattern, pattern) << name;
    };
    expect("job__rank3.pickle", 3, "job__rank*.pickle");
    expect("rank3.memtrail", 3, "rank*.memtrail");
    expect("trace_rank_12.pickle", 12, "trace_rank_*.pickle");
    expect("snap-r3", 3, "snap-r*");
    expect("snap-r3.pickle.zst", 3, "snap-r*.pickle.zst");
    expect("job_3.pickle", 3, "job_*.pickle");
    expect("job-12.memtrail", 12, "job-*.memtrail");
    // "rank" wins over a later trailing number; "r" must stand alone.
    expect("rank1_step_7.pickle", 1, "rank*_step_7.pickle");
    expect("mirror2.pickle", std::nullopt, "mirror2.pickle");
    expect("r2d2.pickle", std::nullopt, "r2d2.pickle");
    expect("resnet50.pickle", std::nullopt, "resnet50.pickle");
    expect("frank2.pickle", std::nullopt, "frank2.pickle");
    expect("_3.pickle", std::nullopt, "_3.pickle");
    expect("", std::nullopt, "");
}

TEST(shared_stack_fraction, shared_over_all_and_nothing_without_stacks) {
    EXPECT_EQ(shared_stack_fraction({1, 2, 3}, {2, 3, 4}), 0.5);
    EXPECT_EQ(shared_stack_fraction({1, 2}, {1, 2}), 1.0);
    EXPECT_EQ(shared_stack_fraction({1}, {2}), 0.0);
    EXPECT_EQ(shared_stack_fraction({}, {2}), std::nullopt);
}

TEST(rank_in_path, finds_the_last_rank_number_not_inside_a_word) {
    EXPECT_EQ(rank_in_path("rank0.memtrail"), 0);
    EXPECT_EQ(rank_in_path("/runs/job7/trace_rank_12.pickle"), 12);
    EXPECT_EQ(rank_in_path("RANK-3.pickle"), 3);
    EXPECT_EQ(rank_in_path("run/rank1/snapshot.pickle"), 1);
    EXPECT_EQ(rank_in_path("rank1/rank5.memtrail"), 5) << "the file's own name is the last";
    EXPECT_EQ(rank_in_path("local_rank2.memtrail"), 2);
    EXPECT_EQ(rank_in_path("/home/frank2/snapshot.pickle"), std::nullopt);
    EXPECT_EQ(rank_in_path("ranks/snapshot.pickle"), std::nullopt);
    EXPECT_EQ(rank_in_path("rank.memtrail"), std::nullopt);
    EXPECT_EQ(rank_in_path("rank99999999999999.memtrail"), std::nullopt) << "too large";
    EXPECT_EQ(rank_in_path(""), std::nullopt);
    EXPECT_EQ(rank_in_path("/runs/snap-r4.pickle"), 4);
    EXPECT_EQ(rank_in_path("/runs/rank2/job_5.pickle"), 5) << "the file's name first";
    EXPECT_EQ(rank_in_path("/runs/job_5/snapshot.pickle"), std::nullopt)
        << "directories name a rank only as rank<N>";
}

TEST(ranks_of_paths, names_when_all_name_distinct_ranks_else_positions) {
    EXPECT_EQ(ranks_of_paths({"rank1.memtrail", "rank0.memtrail"}), (std::vector<int>{1, 0}));
    EXPECT_EQ(ranks_of_paths({"a/rank3.pickle"}), (std::vector<int>{3}));
    EXPECT_EQ(ranks_of_paths({"rank1.memtrail", "other.memtrail"}), (std::vector<int>{0, 1}));
    EXPECT_EQ(ranks_of_paths({"rank1.memtrail", "x/rank1.memtrail"}), (std::vector<int>{0, 1}));
    EXPECT_TRUE(ranks_of_paths({}).empty());
}

// One rank of a two-GPU job: rank `rank` on host node-`rank`, its trace from `start_ns`.
snapshot::snapshot job_rank(int rank, int64_t start_ns) {
    snapshot::snapshot s;
    s.info.producer = "memtrail 0.1.0";
    s.info.host = "node-" + std::to_string(rank);
    s.info.pid = 1000 + rank;
    s.info.devices = {{0, "NVIDIA H200", 150ull << 30, 9, 0, 132},
                      {1, "NVIDIA H200", 150ull << 30, 9, 0, 132}};
    s.settings.conf = "expandable_segments:True";
    s.settings.expandable_segments = true;
    auto& trace = s.trace_for(rank % 2);
    for (int64_t i = 0; i < 3; ++i) {
        snapshot::trace_entry e;
        e.kind = snapshot::action::alloc;
        e.time_ns = start_ns + i * 1'000'000'000;
        trace.entries.push_back(e);
    }
    s.info.time_ns = start_ns + 10'000'000'000;
    return s;
}

constexpr int64_t noon = 1'795'000'000'000'000'000;

TEST(why_not_one_job, ranks_of_one_job_differ_only_in_rank_host_pid_and_a_little_time) {
    const snapshot::snapshot rank0 = job_rank(0, noon);
    EXPECT_EQ(why_not_one_job(rank0, job_rank(1, noon + 5'000'000'000)), std::nullopt);
    snapshot::snapshot renumbered = job_rank(1, noon);
    renumbered.info.devices[0].device = 3;  // each rank numbers what it sees
    EXPECT_EQ(why_not_one_job(rank0, renumbered), std::nullopt);
    snapshot::snapshot no_times = job_rank(1, 0);
    no_times.info.time_ns = 0;
    for (auto& e : no_times.trace_for(1).entries) {
        e.time_ns = 0;
    }
    EXPECT_EQ(why_not_one_job(rank0, no_times), std::nullopt) << "no times: nothing to compare";
}

TEST(why_not_one_job, names_what_tells_two_jobs_apart) {
    const snapshot::snapshot rank0 = job_rank(0, noon);
    const auto reason = [&](snapshot::snapshot other) {
        return why_not_one_job(rank0, other).value_or("one job");
    };
    snapshot::snapshot other = job_rank(1, noon);
    other.info.producer = "torch pickle import";
    EXPECT_NE(reason(other).find("written by"), std::string::npos) << reason(other);
    other = job_rank(1, noon);
    other.info.devices.pop_back();
    EXPECT_NE(reason(other).find("other devices (2 against 1"), std::string::npos);
    other = job_rank(1, noon);
    other.info.devices[1].name = "NVIDIA H100";
    EXPECT_NE(reason(other).find("other devices"), std::string::npos);
    other = job_rank(1, noon);
    other.settings.conf = "";
    EXPECT_NE(reason(other).find("allocator settings"), std::string::npos);
    other = job_rank(1, noon);
    other.info.host = rank0.info.host;
    other.info.pid = rank0.info.pid;
    EXPECT_NE(reason(other).find("the same process"), std::string::npos);
    other = job_rank(1, noon + job_time_gap_ns + 20'000'000'000);
    EXPECT_NE(reason(other).find("minutes apart"), std::string::npos) << reason(other);
    EXPECT_EQ(reason(job_rank(1, noon + job_time_gap_ns)), "one job") << "within the gap";
}

// The real traces: each job's two ranks, loaded once.
class real_jobs : public ::testing::Test {
  protected:
    static void SetUpTestSuite() {
        for (const char* name : {"ddp__rank0.pickle", "ddp__rank1.pickle",
                                 "fsdp2_gpu__rank0.pickle", "fsdp2_gpu__rank1.pickle"}) {
            const fs::path path = fs::path(MEMTRAIL_UNPACKED_TRACES) / name;
            // Unpacked from tests/data at configure time: missing means the build is broken.
            ASSERT_TRUE(fs::exists(path)) << path << " is missing";
            snapshots_.push_back(snapshot::load_snapshot(path).snapshot);
            stacks_.push_back(stack_fingerprints(*snapshots_.back()));
        }
    }
    // The four files, in their order, under `paths`.
    static std::vector<job_file> files(const std::vector<std::string>& paths) {
        std::vector<job_file> out;
        for (size_t i = 0; i < paths.size(); ++i) {
            out.push_back({paths[i], snapshots_[i].get(), &stacks_[i]});
        }
        return out;
    }
    static inline std::vector<std::shared_ptr<const snapshot::snapshot>> snapshots_;
    static inline std::vector<std::vector<uint64_t>> stacks_;
};

TEST_F(real_jobs, files_of_two_jobs_are_two_jobs_by_their_names) {
    const auto jobs =
        group_into_jobs(files({"/t/ddp__rank0.pickle", "/t/ddp__rank1.pickle",
                               "/t/fsdp2_gpu__rank0.pickle", "/t/fsdp2_gpu__rank1.pickle"}));
    ASSERT_EQ(jobs.size(), 2u);
    EXPECT_EQ(jobs[0].name, "ddp__rank*.pickle");
    EXPECT_EQ(jobs[0].files, (std::vector<size_t>{0, 1}));
    EXPECT_EQ(jobs[0].ranks, (std::vector<int>{0, 1}));
    EXPECT_EQ(jobs[1].name, "fsdp2_gpu__rank*.pickle");
    EXPECT_EQ(jobs[1].files, (std::vector<size_t>{2, 3}));
    EXPECT_EQ(jobs[1].ranks, (std::vector<int>{0, 1}));
    EXPECT_EQ(jobs[1].why_not_first,
              "named as another job (fsdp2_gpu__rank*.pickle, not ddp__rank*.pickle)");
}

TEST_F(real_jobs, unnamed_files_of_two_jobs_are_told_apart_by_their_stacks) {
    // Same devices, settings and hour: only the code differs (DDP against FSDP2).
    EXPECT_EQ(why_not_one_job(*snapshots_[0], *snapshots_[2]), std::nullopt);
    const auto shared = shared_stack_fraction(stacks_[0], stacks_[2]);
    ASSERT_TRUE(shared);
    EXPECT_LT(*shared, same_code_stack_fraction);
    EXPECT_EQ(shared_stack_fraction(stacks_[2], stacks_[3]), 1.0) << "ranks run the same code";
    const auto jobs = group_into_jobs(files({"b.pickle", "c.pickle", "a.pickle", "d.pickle"}));
    ASSERT_EQ(jobs.size(), 2u);
    EXPECT_EQ(jobs[0].files, (std::vector<size_t>{0, 1}));
    EXPECT_EQ(jobs[1].files, (std::vector<size_t>{2, 3}));
    EXPECT_EQ(jobs[1].ranks, (std::vector<int>{0, 1})) << "by position within its job";
    EXPECT_NE(jobs[1].why_not_first.find("other code"), std::string::npos) << jobs[1].why_not_first;
}

TEST_F(real_jobs, a_rank_named_twice_starts_another_job) {
    const std::vector<job_file> named = {
        {"x/fsdp2__rank1.pickle", snapshots_[2].get(), &stacks_[2]},
        {"y/fsdp2__rank1.pickle", snapshots_[3].get(), &stacks_[3]},
        {"y/fsdp2__rank0.pickle", snapshots_[2].get(), &stacks_[2]}};
    const auto jobs = group_into_jobs(named);
    ASSERT_EQ(jobs.size(), 2u);
    EXPECT_EQ(jobs[0].files, (std::vector<size_t>{0, 2}));
    EXPECT_EQ(jobs[0].ranks, (std::vector<int>{1, 0}));
    EXPECT_EQ(jobs[1].why_not_first, "the job has a rank 1 already (fsdp2__rank1.pickle)");
}

}  // namespace
}  // namespace memtrail::analysis

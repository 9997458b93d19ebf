#pragma once
// Which rank summaries are ranks of one job: by the job id their snapshots recorded, else by
// the rule rank_jobs.hpp applies to snapshots (names, producer, devices, allocator settings,
// process, times and the code they ran), from what a summary keeps of each. Each file is
// compared with the first file of each job found so far, so thousands of files cost thousands
// of comparisons per job, not per pair.

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "memtrail/analysis/rank_summary.hpp"

namespace memtrail::analysis {

// Why two summaries cannot be ranks of one job, from their identities alone (as
// why_not_one_job says for snapshots); nullopt when nothing tells them apart.
std::optional<std::string> why_not_same_job(const summary_identity& a, const summary_identity& b);

// The share of stacks two summaries' sketches have in common (bottom-k: of the smallest hashes
// of both, those in both), nullopt when either has none.
std::optional<double> shared_sketch_fraction(const std::vector<uint64_t>& a,
                                             const std::vector<uint64_t>& b);

struct summary_job {
    std::string name;    // the job id, else the first file's name pattern ("ddp__rank*.pickle")
    std::string job_id;  // "" when its snapshots recorded none
    std::vector<size_t> members;  // indexes into the summaries, ordered by rank
    std::vector<int> ranks;       // parallel to members
    std::string why_not_first;    // for every job but the first: why it is not the first job
};

// The summaries split into jobs, in the order of their first files.
std::vector<summary_job> group_summaries(const std::vector<rank_summary>& summaries);

}  // namespace memtrail::analysis

#pragma once
// Which job and which rank a snapshot file is. Neither PyTorch's pickles nor memtrail snapshots
// record a rank, a world size or a job id, so both come from what the files do hold: their
// names (job__rank3.pickle, rank3.memtrail, snap-r3, trace_3.pickle), their producer, devices,
// allocator settings, process and times, and the stacks their allocations were made under
// (ranks of one job run the same code). Files of different jobs are never merged: each job
// keeps its own files and rank numbers.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "memtrail/snapshot/model.hpp"

namespace memtrail::analysis {

// The last component of a path: what tables show of a file.
std::string file_name_of(std::string_view path);

// What a file's name (not its directories) says: the rank it names and the name with that
// rank's digits replaced by '*', which is the same for every rank of one job
// ("job__rank3.pickle" -> 3, "job__rank*.pickle"). Recognised, the first that matches:
// the last "rank<N>" (also "rank_N", "rank-N", "RANK.N") where "rank" does not continue a word;
// the last "r<N>" standing alone between separators ("snap-r3"); a number ending the name
// before its extension after '_' or '-' ("trace_3.pickle"). No rank: rank is nullopt and
// the pattern is the name itself.
struct rank_name {
    std::optional<int> rank;
    std::string pattern;
};
rank_name rank_in_file_name(std::string_view file_name);

// The rank a path names: its file name's, else the last "rank<N>" of its directories
// (run/rank1/snapshot.pickle). "/home/frank2/snapshot.pickle" names none.
std::optional<int> rank_in_path(std::string_view path);

// Ranks of files of one job: what their paths name when each names one and no two name the
// same, else their positions 0, 1, 2, ...
std::vector<int> ranks_of_paths(const std::vector<std::string>& paths);

// Why snapshots `a` and `b` cannot be two ranks of one distributed job, from what snapshots hold
// (no job id): written by another producer (tool and version), on other devices (their count,
// names and memory, compared without their numbers, which differ by rank), under other allocator
// settings, by the same process (same host and pid: two moments of one rank), or at times more
// than job_time_gap apart (the spans from each one's first trace entry to when it was taken, as
// ranks of one job run together). nullopt when nothing tells them apart.
inline constexpr int64_t job_time_gap_ns = 3600'000'000'000;  // an hour
std::optional<std::string> why_not_one_job(const snapshot::snapshot& a,
                                           const snapshot::snapshot& b);

// The distinct stacks a snapshot recorded (its allocations', in its traces and segments), each
// as a 64-bit hash of its stack_text, sorted: what the code it ran looks like, small and quick
// to compare (the viewer compares every frame). Unrecorded (empty) stacks are left out.
std::vector<uint64_t> stack_fingerprints(const snapshot::snapshot& source);

// The share of the two snapshots' stacks that both have (shared over all, 0..1); nullopt when
// either has none, as then the stacks say nothing.
std::optional<double> shared_stack_fraction(const std::vector<uint64_t>& a,
                                            const std::vector<uint64_t>& b);
// Below this share, two snapshots run different code: they are not ranks of one job.
inline constexpr double same_code_stack_fraction = 0.5;

// One file to be placed in a job: its path as given, its snapshot and its stack_fingerprints,
// computed once by the caller.
struct job_file {
    std::string path;
    const snapshot::snapshot* source = nullptr;
    const std::vector<uint64_t>* stacks = nullptr;
};

// Why `files[file]` cannot be a rank of the job whose files are `members` (indexes into
// `files`; the first stands for the job): names of another pattern when both name a rank, a
// rank the job has already, what why_not_one_job finds, or other code (shared_stack_fraction
// below same_code_stack_fraction). nullopt when it can.
std::optional<std::string> why_not_in_job(const std::vector<job_file>& files,
                                          const std::vector<size_t>& members, size_t file);

// The files of one job, in the order given, with their ranks.
struct rank_job {
    std::string name;           // its first file's name pattern ("ddp__rank*.pickle")
    std::vector<size_t> files;  // indexes into the files grouped
    std::vector<int> ranks;     // parallel to `files`, as ranks_of_paths numbers them
    std::string why_not_first;  // for every job but the first: why its first file is not a
                                // rank of the first job
};

// The files split into jobs, in the order of their first files: each file joins the first job
// it can be a rank of (why_not_in_job), else starts a job.
std::vector<rank_job> group_into_jobs(const std::vector<job_file>& files);

}  // namespace memtrail::analysis

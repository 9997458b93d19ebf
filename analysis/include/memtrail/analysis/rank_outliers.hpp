#pragma once
// "Which of my 1,024 ranks is different, and why", from rank summaries: the files split into
// jobs (summary_jobs.hpp); in each job every rank's robust distance from the job's median on
// peak reserved, peak allocated and each category at the peak; ranks that did exactly the same
// (equal sequence hashes) grouped, and where each other rank's sequence departs from the most
// common one; and each outlier explained against the median rank by category and by stack.
// `memtrail ranks` prints this (table or JSON) and `memtrail report` renders it.

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "memtrail/analysis/peak_comparison.hpp"
#include "memtrail/analysis/rank_summary.hpp"
#include "memtrail/analysis/summary_jobs.hpp"

namespace memtrail::analysis {

// A rank is an outlier when some measure stands this many robust deviations from the job's
// median: Iglewicz and Hoaglin's cut for modified z-scores.
inline constexpr double outlier_cut = 3.5;
// The deviation a measure is scaled by is at least this share of its median, and at least
// 1 MiB: ranks of one job differ by rounding and by where their peaks fall, and with few ranks
// the median absolute deviation is 0.
inline constexpr double least_deviation_share = 0.05;
// Stacks named per outlier.
inline constexpr size_t explained_stack_count = 5;

// One measure of every rank: "peak reserved", "peak allocated" or a category at the peak.
struct rank_measure {
    std::string name;
    std::vector<uint64_t> values;  // parallel to the job's members
    uint64_t median = 0;     // the lower median, a value some rank has; of two ranks, the median
                             // rank's (median_rank: the one with the lower peak reserved)
    uint64_t deviation = 0;  // the scale: max(1.4826 x MAD, share of the median, 1 MiB)
};

// Where a rank stands: its largest distance over the measures, and which measure.
struct rank_standing {
    double distance = 0.0;  // |value - median| / deviation, the largest over the measures
    size_t measure = 0;     // index into the job's measures
};

// Ranks whose sequences of allocations hashed equal.
struct same_sequence {
    uint64_t sequence_hash = 0;
    std::vector<int> ranks;  // ascending
};

// Where a rank's sequence first departs from the most common one.
struct sequence_departure {
    int rank = 0;
    bool by_step = false;    // the chunks are training steps (else runs of entries)
    size_t step = 0;         // the first step that differs (by_step)
    size_t first_entry = 0;  // that chunk's first entry
};

// A folded stack (matched by hash) in the outlier and in the median rank, at their peaks.
struct stack_difference {
    uint64_t hash = 0;
    std::vector<std::string> frames;  // innermost first
    memory_category category = memory_category::unknown;
    uint64_t median_bytes = 0;  // 0 also when not among the median rank's top stacks
    uint64_t rank_bytes = 0;
    int64_t change() const {
        return static_cast<int64_t>(rank_bytes) - static_cast<int64_t>(median_bytes);
    }
};

struct outlier_explanation {
    size_t member = 0;         // index into the job's members
    size_t median_member = 0;  // the rank it is compared with
    // Two sides: 0 the median rank, 1 the outlier, at each one's peak allocated.
    std::vector<category_comparison> categories;
    std::string categories_text;  // category_changes_text from the median rank to the outlier
    std::vector<stack_difference> stacks;  // the largest changes first
};

struct job_ranking {
    summary_job job;
    size_t median_member = 0;  // the rank at the median of peak reserved (median_rank)
    std::vector<rank_measure> measures;
    std::vector<rank_standing> standings;        // parallel to members
    std::vector<size_t> by_distance;             // members, farthest first (rank order on ties)
    std::vector<same_sequence> sequences;        // the most ranks first
    std::vector<sequence_departure> departures;  // ranks outside the most common sequence
    std::vector<outlier_explanation> outliers;   // farthest first
};

struct ranks_analysis {
    std::vector<job_ranking> jobs;
};

ranks_analysis analyze_ranks(const std::vector<rank_summary>& summaries);

// "0-511 and 513-1023", "0, 2-5 and 9": ascending ranks as ranges.
std::string rank_ranges(const std::vector<int>& ranks);

}  // namespace memtrail::analysis

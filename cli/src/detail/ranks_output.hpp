#pragma once
// `memtrail ranks` output: a table for people, JSON for machines, both from one
// analysis::ranks_analysis and the summaries it ranked.

#include <cstddef>
#include <ostream>
#include <string>
#include <vector>

#include "memtrail/analysis/rank_outliers.hpp"

namespace memtrail::cli {

// Ranks listed per job in the table: all of them up to this many, else this many, the farthest
// from the median first.
inline constexpr size_t listed_ranks = 20;
// Outliers explained in the table (JSON has all).
inline constexpr size_t explained_outliers = 10;

// One warning per job after the first: which files, and why they are not the first job's.
std::vector<std::string> job_warnings(const analysis::ranks_analysis& ranks,
                                      const std::vector<analysis::rank_summary>& summaries);

void print_ranks_text(std::ostream& out, const analysis::ranks_analysis& ranks,
                      const std::vector<analysis::rank_summary>& summaries);
void print_ranks_json(std::ostream& out, const analysis::ranks_analysis& ranks,
                      const std::vector<analysis::rank_summary>& summaries,
                      const std::vector<std::string>& warnings);

// A job's ranks added up: the table's total row, the JSON's "total".
analysis::rank_totals job_totals_of(const analysis::job_ranking& job,
                                    const std::vector<analysis::rank_summary>& summaries);
// The member of `job` (an index in its members) whose reserved memory peaks highest, the first
// on a tie.
size_t highest_reserved_member(const analysis::job_ranking& job,
                               const std::vector<analysis::rank_summary>& summaries);

// "entry 102, +1.250s" (the time from the rank's first entry, left out without times).
std::string peak_when(const analysis::rank_summary& s, const analysis::summary_peak& peak);

}  // namespace memtrail::cli

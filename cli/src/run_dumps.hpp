#pragma once
// The snapshots a `memtrail run` wrote, for --summary: its exit dump and every signal and OOM
// dump, its children's included (they expand %p, %d and %t to their own values).

#include <filesystem>
#include <string>
#include <vector>

namespace memtrail::cli {

// Files in the folder of each pattern whose names match it, each %p, %d or %t standing for any
// text, written at or after `since` (less two seconds, for file systems that keep coarse times),
// sorted and each once; summaries (.summary.json) left out.
std::vector<std::string> dumps_written(const std::vector<std::string>& patterns,
                                       std::filesystem::file_time_type since);

// Writes the summary of each dump beside it (docs/ranks.md), saying so on standard error; a dump
// that cannot be summarized is said and skipped.
void summarize_dumps(const std::vector<std::string>& dumps);

}  // namespace memtrail::cli

#pragma once
// --summary: a rank summary beside every snapshot a `memtrail run` wrote (the list its
// processes keep, written_snapshots).

#include <string>
#include <vector>

namespace memtrail::cli {

// Writes the summary of each dump beside it (docs/ranks.md), saying so on standard error; a dump
// that cannot be summarized is said and skipped.
void summarize_dumps(const std::vector<std::string>& dumps);

}  // namespace memtrail::cli

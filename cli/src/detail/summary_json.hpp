#pragma once
// A rank summary as the JSON file docs/ranks.md describes, and back. Hashes are written as 16
// hex digits (a string), so every JSON tool keeps all 64 bits.

#include <ostream>
#include <string>
#include <string_view>

#include "memtrail/analysis/rank_summary.hpp"

namespace memtrail::cli {

// What a summary file's "format" key says.
inline constexpr std::string_view summary_format_name = "memtrail rank summary";
// The extension summarize gives its files ("run.pickle" -> "run.pickle.summary.json").
inline constexpr std::string_view summary_extension = ".summary.json";

void write_summary_json(std::ostream& out, const analysis::rank_summary& summary);

// Reads what write_summary_json wrote. Throws json_error naming the key that is wrong and what
// was expected; a newer version than this memtrail reads is refused, saying both versions.
analysis::rank_summary read_summary_json(std::string_view text);

// Whether `text` starts like a summary (a JSON object): what ranks uses to tell summaries from
// snapshots.
bool looks_like_summary(std::string_view text);

}  // namespace memtrail::cli

#pragma once
// Reading a rank summary's JSON file (docs/ranks.md): what `memtrail ranks` and the viewer's
// Ranks view read. The CLI writes them (cli/src/summary_json.hpp).

#include <string>
#include <string_view>

#include "memtrail/analysis/rank_summary.hpp"

namespace memtrail::analysis {

// What a summary file's "format" key says.
inline constexpr std::string_view summary_format_name = "memtrail rank summary";
// The extension summarize gives its files ("run.pickle" -> "run.pickle.summary.json").
inline constexpr std::string_view summary_extension = ".summary.json";

// Reads what `memtrail summarize` wrote. Throws snapshot::json_error naming the key that is
// wrong and what was expected; a newer version than this memtrail reads is refused, saying both
// versions.
rank_summary read_summary_json(std::string_view text);

// Reads the summary file at `path`. Throws snapshot::load_error naming the file: it cannot be
// opened, or it is not a rank summary (and why, as read_summary_json says).
rank_summary read_summary_file(const std::string& path);

// Whether `text` starts like a summary (a JSON object): what ranks uses to tell summaries from
// snapshots.
bool looks_like_summary(std::string_view text);

}  // namespace memtrail::analysis

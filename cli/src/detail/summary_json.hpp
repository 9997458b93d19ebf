#pragma once
// A rank summary as the JSON file docs/ranks.md describes. Hashes are written as 16 hex digits
// (a string), so every JSON tool keeps all 64 bits. The reader is the analysis library's
// (memtrail/analysis/rank_summary_json.hpp), which the viewer shares.

#include <ostream>

#include "memtrail/analysis/rank_summary.hpp"
#include "memtrail/analysis/rank_summary_json.hpp"

namespace memtrail::cli {

using analysis::looks_like_summary;
using analysis::read_summary_json;
using analysis::summary_extension;
using analysis::summary_format_name;

void write_summary_json(std::ostream& out, const analysis::rank_summary& summary);

}  // namespace memtrail::cli

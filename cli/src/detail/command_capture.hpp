#pragma once
// Another subcommand's output as a string: the report embeds what `memtrail summary --json`,
// `oom`, `ranks`... print, so its numbers are theirs by construction, never recomputed.

#include <string>
#include <string_view>
#include <vector>

namespace memtrail::cli {

// Runs subcommand `name` with `arguments` (as after `memtrail NAME`) and returns what it wrote to
// standard output. Errors propagate as they would from the command itself (usage_error,
// snapshot::load_error); a command that exits non-zero without throwing is a std::runtime_error.
std::string command_output(std::string_view name, const std::vector<std::string>& arguments);

}  // namespace memtrail::cli

#pragma once
// Frames and stacks as text, one spelling for reports, flame graphs and exports.

#include <string>
#include <string_view>
#include <vector>

#include "memtrail/snapshot/model.hpp"

namespace memtrail::analysis {

// `text` with control characters (ESC, BEL, CR, LF, DEL, ...) written as \xNN: text taken from a
// snapshot (names, the user's metadata) or a command line, shown in a terminal or a table,
// cannot move the cursor or forge a line. Every frame label goes through it.
std::string printable(std::string_view text);

// "function (file:line)"; a native frame without a symbol is "module+0xoffset".
std::string frame_label(const snapshot::snapshot& source, snapshot::frame_id id);

// The stack's frames as labels, outermost (program entry) first.
std::vector<std::string> stack_labels(const snapshot::snapshot& source, snapshot::stack_id id);

// Label used for blocks whose allocation stack was not recorded.
inline constexpr const char* unknown_stack_label = "[no stack recorded]";

}  // namespace memtrail::analysis

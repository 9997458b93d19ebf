#pragma once
// What files hold at their own peaks of allocated memory, by category and by stack, side by
// side: the table `ranks` explains the highest rank with and the one `diff` adds.

#include <ostream>
#include <string>
#include <vector>

#include "json_writer.hpp"
#include "memtrail/analysis/peak_comparison.hpp"

namespace memtrail::cli {

// Columns of a comparison: which of the peaks, and the heading of each. A change column
// follows every side after the first (its change from the first).
struct compared_sides {
    std::vector<size_t> indexes;
    std::vector<std::string> headings;
};

// One row per category held on any side, largest change first; then `stacks` (their innermost
// frame, file names without directories, and the category most of their bytes are in); then,
// `with_unstacked`, the blocks with no stack when any side has them.
void print_peak_table(std::ostream& out, const std::vector<analysis::peak_contents>& peaks,
                      const std::vector<analysis::category_comparison>& categories,
                      const std::vector<analysis::stack_change>& stacks,
                      const compared_sides& sides, bool with_unstacked);

// The sentence under the table for blocks with no stack, "" when no side has any.
std::string unstacked_note(const std::vector<analysis::peak_contents>& peaks,
                           const compared_sides& sides);

// The categories of every side as an array of {category, bytes: [...], change: [...], equal:
// [...]} (change and equal from the first side), in memory_category's order.
void write_category_comparison(json_writer& json,
                               const std::vector<analysis::category_comparison>& categories,
                               const compared_sides& sides);

// "dropout (functional.py:1443)": a frame label with its file's directories left out.
std::string short_frame_label(const std::string& label);

}  // namespace memtrail::cli

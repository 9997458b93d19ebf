#include "detail/peak_report.hpp"

#include <algorithm>
#include <cstdlib>

#include "detail/common.hpp"
#include "detail/text_table.hpp"
#include "memtrail/analysis/frame_filter.hpp"
#include "memtrail/analysis/size_text.hpp"

namespace memtrail::cli {

using analysis::format_bytes;
using analysis::format_bytes_delta;

std::string short_frame_label(const std::string& label) {
    const size_t open = label.rfind(" (");
    if (open == std::string::npos) {
        return label;
    }
    const size_t slash = label.rfind('/');
    if (slash == std::string::npos || slash < open) {
        return label;
    }
    return label.substr(0, open + 2) + label.substr(slash + 1);
}

namespace {

int64_t change(uint64_t from, uint64_t to) {
    return static_cast<int64_t>(to) - static_cast<int64_t>(from);
}

// The byte cells of one row: each side, and after the first each one's change from it.
std::vector<std::string> byte_cells(const std::vector<uint64_t>& bytes) {
    std::vector<std::string> cells = {format_bytes(bytes[0])};
    for (size_t i = 1; i < bytes.size(); ++i) {
        cells.push_back(format_bytes(bytes[i]));
        cells.push_back(format_bytes_delta(change(bytes[0], bytes[i])));
    }
    return cells;
}

void add_row(text_table& table, std::string kind, std::string what,
             const std::vector<uint64_t>& bytes, std::string category) {
    std::vector<std::string> cells = {std::move(kind), std::move(what)};
    for (std::string& cell : byte_cells(bytes)) {
        cells.push_back(std::move(cell));
    }
    cells.push_back(std::move(category));
    table.add_row(std::move(cells));
}

std::vector<uint64_t> pick(const std::vector<uint64_t>& all, const compared_sides& sides) {
    std::vector<uint64_t> out;
    for (const size_t i : sides.indexes) {
        out.push_back(all[i]);
    }
    return out;
}

// The largest change from the first side, in magnitude.
int64_t largest_change(const std::vector<uint64_t>& bytes) {
    int64_t largest = 0;
    for (size_t i = 1; i < bytes.size(); ++i) {
        if (std::abs(change(bytes[0], bytes[i])) > std::abs(largest)) {
            largest = change(bytes[0], bytes[i]);
        }
    }
    return largest;
}

}  // namespace

void print_peak_table(std::ostream& out, const std::vector<analysis::peak_contents>& peaks,
                      const std::vector<analysis::category_comparison>& categories,
                      const std::vector<analysis::stack_change>& stacks,
                      const compared_sides& sides, bool with_unstacked) {
    std::vector<std::string> columns = {"<", "<", sides.headings[0]};
    for (size_t i = 1; i < sides.indexes.size(); ++i) {
        columns.push_back(sides.headings[i]);
        columns.push_back("change");
    }
    columns.emplace_back(with_unstacked || !stacks.empty() ? "<in" : "<");
    text_table table(columns);
    struct category_row {
        analysis::memory_category category;
        std::vector<uint64_t> bytes;
    };
    std::vector<category_row> held;
    for (const auto& c : categories) {
        std::vector<uint64_t> bytes = pick(c.bytes, sides);
        if (std::any_of(bytes.begin(), bytes.end(), [](uint64_t b) { return b != 0; })) {
            held.push_back({c.category, std::move(bytes)});
        }
    }
    std::stable_sort(held.begin(), held.end(), [](const category_row& a, const category_row& b) {
        return std::abs(largest_change(a.bytes)) > std::abs(largest_change(b.bytes));
    });
    for (const category_row& row : held) {
        add_row(table, "category", std::string(analysis::category_name(row.category)), row.bytes,
                "");
    }
    for (const analysis::stack_change& s : stacks) {
        const snapshot::snapshot& source = *peaks[s.stack.first_holder].source;
        // The innermost frame, and the user's own line that led there when it is another.
        std::string label = short_frame_label(innermost_frame(source, s.stack.stack));
        const snapshot::frame_id user = analysis::users_frame(source, s.stack.stack);
        const auto& frames = source.stack_at(s.stack.stack);
        if (user != snapshot::no_id && !frames.empty() && frames.front() != user) {
            label += " <- " + short_frame_label(analysis::frame_label(source, user));
        }
        add_row(table, "stack", label, pick(s.stack.bytes, sides),
                std::string(analysis::category_name(s.category)));
    }
    std::vector<uint64_t> unstacked;
    for (const size_t i : sides.indexes) {
        unstacked.push_back(peaks[i].unstacked_bytes());
    }
    if (with_unstacked &&
        std::any_of(unstacked.begin(), unstacked.end(), [](uint64_t b) { return b != 0; })) {
        add_row(table, "no stack", "(see below)", unstacked, "");
    }
    table.print(out, "  ");
}

std::string unstacked_note(const std::vector<analysis::peak_contents>& peaks,
                           const compared_sides& sides) {
    std::string by_side;
    for (size_t i = 0; i < sides.indexes.size(); ++i) {
        const analysis::peak_contents& peak = peaks[sides.indexes[i]];
        if (peak.unstacked_bytes() == 0) {
            continue;
        }
        std::string parts;
        for (size_t c = 0; c < analysis::memory_category_count; ++c) {
            if (peak.unstacked[c] != 0) {
                parts += (parts.empty() ? "" : ", ") +
                         std::string(
                             analysis::category_name(static_cast<analysis::memory_category>(c))) +
                         " " + format_bytes(peak.unstacked[c]);
            }
        }
        by_side += (by_side.empty() ? "" : "; ") + sides.headings[i] + " " +
                   format_bytes(peak.unstacked_bytes()) + " (" + parts + ")";
    }
    if (by_side.empty()) {
        return "";
    }
    return "no stack: " + by_side + "; " + analysis::why_unstacked(*peaks[sides.indexes[0]].source);
}

void write_category_comparison(json_writer& json,
                               const std::vector<analysis::category_comparison>& categories,
                               const compared_sides& sides) {
    json.begin_array();
    for (const auto& c : categories) {
        const std::vector<uint64_t> bytes = pick(c.bytes, sides);
        json.begin_object().field("category", analysis::category_name(c.category));
        json.key("bytes").begin_array();
        for (const uint64_t b : bytes) {
            json.value(b);
        }
        json.end_array().key("change").begin_array();
        for (size_t i = 1; i < bytes.size(); ++i) {
            json.value(change(bytes[0], bytes[i]));
        }
        json.end_array().key("equal").begin_array();
        for (size_t i = 1; i < bytes.size(); ++i) {
            json.value(analysis::about_equal(bytes[0], bytes[i]));
        }
        json.end_array().end_object();
    }
    json.end_array();
}

}  // namespace memtrail::cli

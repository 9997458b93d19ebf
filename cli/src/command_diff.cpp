// memtrail diff BASE OTHER... : what changed between snapshots (or ranks), in totals, by
// category at each file's own peak, and per allocation stack.

#include <algorithm>
#include <iostream>

#include "detail/commands.hpp"
#include "detail/common.hpp"
#include "detail/peak_report.hpp"
#include "detail/report_json.hpp"
#include "detail/text_table.hpp"
#include "memtrail/analysis/peak_comparison.hpp"
#include "memtrail/analysis/rank_jobs.hpp"
#include "memtrail/analysis/size_text.hpp"
#include "memtrail/analysis/stack_comparison.hpp"

namespace memtrail::cli {
namespace {

using analysis::format_bytes;
using analysis::format_bytes_delta;

struct side {
    opened_file file;
    moment at;
    analysis::memory_totals totals;
};

int64_t delta(uint64_t before, uint64_t after) {
    return static_cast<int64_t>(after) - static_cast<int64_t>(before);
}

// Takes the blocks with no stack out of `stacks` and returns their bytes: they are no one
// stack, and listed with the others they would lead the list (backward's blocks have none).
uint64_t take_unstacked(const snapshot::snapshot& source,
                        std::vector<analysis::stack_bytes>& stacks) {
    uint64_t bytes = 0;
    std::erase_if(stacks, [&](const analysis::stack_bytes& s) {
        const bool none = source.stack_at(s.stack).empty();
        bytes += none ? s.bytes : 0;
        return none;
    });
    return bytes;
}

// The sides' headings: "base", "[1]", "[2]", ...
compared_sides all_sides(size_t count) {
    compared_sides sides;
    for (size_t i = 0; i < count; ++i) {
        sides.indexes.push_back(i);
        sides.headings.push_back(i == 0 ? "base" : "[" + std::to_string(i) + "]");
    }
    return sides;
}

// What `diff` prints under its totals: each file at its own peak allocated, by category.
void print_categories_at_peaks(const std::vector<analysis::peak_contents>& peaks,
                               const std::vector<analysis::category_comparison>& categories) {
    const compared_sides sides = all_sides(peaks.size());
    std::cout << "\nby category, each file at its own peak allocated (";
    for (size_t i = 0; i < peaks.size(); ++i) {
        std::cout << (i == 0 ? "" : ", ") << sides.headings[i] << " at "
                  << position_label(peaks[i].position);
    }
    std::cout << "):\n";
    print_peak_table(std::cout, peaks, categories, {}, sides, false);
    for (size_t i = 1; i < peaks.size(); ++i) {
        std::cout << sides.headings[i] << ": " << analysis::category_changes_text(categories, 0, i)
                  << "\n";
    }
}

// Everything a diff reports, computed once for the text and the JSON.
struct diff_report {
    std::vector<side> sides;
    std::vector<analysis::stacks_in_snapshot> stacks;  // allocated bytes at --at, per side
    std::vector<uint64_t> unstacked;                   // of them with no stack, per side
    std::vector<analysis::peak_contents> peaks;        // each side at its own peak allocated
    std::vector<analysis::category_comparison> categories;
    std::vector<analysis::matched_stack> ordered;  // stacks changed most
    size_t best = 0;                               // the side that peaks highest (reserved)
};

void print_json(const diff_report& r) {
    json_writer json(std::cout);
    json.begin_object().key("files").begin_array();
    for (const auto& s : r.sides) {
        json.begin_object()
            .field("path", s.file.path)
            .field("file", analysis::file_name_of(s.file.path));
        json.key("at");
        write_moment(json, s.file.model, s.at);
        json.key("totals");
        write_totals(json, s.totals);
        json.key("peaks");
        write_peaks(json, s.file.model);
        json.end_object();
    }
    json.end_array().key("stacks").begin_array();
    for (const auto& change : r.ordered) {
        json.begin_object().key("bytes").begin_array();
        for (const uint64_t b : change.bytes) {
            json.value(b);
        }
        json.end_array().key("delta_from_base").begin_array();
        for (size_t i = 1; i < r.sides.size(); ++i) {
            json.value(change.change_from_first(i));
        }
        json.end_array().key("frames");
        write_stack(json, *r.stacks[change.first_holder].source, change.stack);
        json.end_object();
    }
    json.end_array().key("unstacked").begin_object().key("bytes").begin_array();
    for (const uint64_t b : r.unstacked) {
        json.value(b);
    }
    json.end_array().field("why", analysis::why_unstacked(*r.stacks[0].source)).end_object();
    const compared_sides sides = all_sides(r.sides.size());
    json.key("categories_at_peaks").begin_object().key("positions").begin_array();
    for (const auto& peak : r.peaks) {
        json.value(static_cast<uint64_t>(peak.position));
    }
    json.end_array().key("categories");
    write_category_comparison(json, r.categories, sides);
    json.key("summaries").begin_array();
    for (size_t i = 1; i < r.sides.size(); ++i) {
        json.value(analysis::category_changes_text(r.categories, 0, i));
    }
    json.end_array().end_object();
    json.key("highest_peak")
        .begin_object()
        .field("index", static_cast<uint64_t>(r.best))
        .field("path", r.sides[r.best].file.path)
        .end_object()
        .end_object();
}

void print_totals(const std::vector<side>& sides) {
    std::vector<std::string> columns = {"<", "base"};
    for (size_t i = 1; i < sides.size(); ++i) {
        columns.push_back("[" + std::to_string(i) + "]");
        columns.push_back("change");
    }
    text_table table(columns);
    auto row = [&](const std::string& name, auto value) {
        std::vector<std::string> cells = {name, format_bytes(value(sides[0]))};
        for (size_t i = 1; i < sides.size(); ++i) {
            cells.push_back(format_bytes(value(sides[i])));
            cells.push_back(format_bytes_delta(delta(value(sides[0]), value(sides[i]))));
        }
        table.add_row(cells);
    };
    row("reserved", [](const side& s) { return s.totals.reserved; });
    row("allocated", [](const side& s) { return s.totals.allocated; });
    row("pending free", [](const side& s) { return s.totals.pending_free; });
    row("free in segments", [](const side& s) { return s.totals.free; });
    row("rounding waste", [](const side& s) { return s.totals.rounding_waste; });
    row("peak allocated",
        [](const side& s) { return peak_bytes(s.file.model, analysis::series::allocated); });
    row("peak reserved",
        [](const side& s) { return peak_bytes(s.file.model, analysis::series::reserved); });
    table.print(std::cout);
}

void print_stacks(const diff_report& r, size_t depth) {
    std::cout << "\nallocation stacks that changed most (allocated bytes):\n";
    if (r.ordered.empty()) {
        std::cout << "  none\n";
    }
    for (const auto& change : r.ordered) {
        std::cout << "  " << format_bytes_delta(change.largest_change()) << "  ("
                  << format_bytes(change.bytes[0]);
        for (size_t i = 1; i < r.sides.size(); ++i) {
            std::cout << " -> " << format_bytes(change.bytes[i]);
        }
        std::cout << ")\n";
        for (const auto& line :
             stack_lines(*r.stacks[change.first_holder].source, change.stack, depth)) {
            std::cout << "        " << line << "\n";
        }
    }
    if (std::any_of(r.unstacked.begin(), r.unstacked.end(), [](uint64_t b) { return b != 0; })) {
        std::string text = "and in blocks with no stack: " + format_bytes(r.unstacked[0]);
        for (size_t i = 1; i < r.unstacked.size(); ++i) {
            text += " -> " + format_bytes(r.unstacked[i]);
        }
        text += "; " + analysis::why_unstacked(*r.stacks[0].source);
        std::cout << wrap_text(text, 100, "  ") << "\n";
    }
}

void print_text(const diff_report& r, size_t depth) {
    for (size_t i = 0; i < r.sides.size(); ++i) {
        std::cout << (i == 0 ? "base: " : "[" + std::to_string(i) + "]:  ") << r.sides[i].file.path
                  << ", at " << r.sides[i].at.label << "\n";
    }
    std::cout << "\n";
    print_totals(r.sides);
    print_categories_at_peaks(r.peaks, r.categories);
    print_stacks(r, depth);
    if (r.sides.size() > 2) {
        const side& best = r.sides[r.best];
        std::cout << "\n"
                  << (r.best == 0 ? "base" : "[" + std::to_string(r.best) + "]") << " ("
                  << analysis::file_name_of(best.file.path) << ") peaks highest: "
                  << format_bytes(peak_bytes(best.file.model, analysis::series::reserved))
                  << " reserved\n";
    }
}

}  // namespace

command_spec diff_spec() {
    return {"diff",
            "BASE OTHER... [--at EVENT|peak|end] [-n N] [--depth D] [--device N] [--all-frames] "
            "[--json]",
            "Compares snapshots (or the ranks of one job) with the first: totals, peaks, the "
            "categories each file holds at its own peak allocated, and the allocation stacks "
            "whose live bytes changed most (blocks with no stack set apart, with the reason).",
            "",
            2,
            SIZE_MAX,
            {at_option(),
             device_option(),
             all_frames_option(),
             {"--count", "-n", "N", "stacks to list (default 10)", false},
             depth_option(6)}};
}

int run_diff(const parsed_arguments& args) {
    const size_t count =
        args.value("--count") ? parse_count_option("--count", *args.value("--count")) : 10;
    const size_t depth = depth_of(args, 6);
    diff_report r;
    for (const auto& path : args.positional) {
        side s{open_file(path, args, frames_shown(args)), {}, {}};
        s.at = resolve_at(s.file.model, args.value("--at"));
        const auto state = s.file.model.state_after(s.at.position);
        s.totals = analysis::totals_of(state);
        // The model shares its snapshot, so the pointer outlives moving the side.
        r.stacks.push_back({&s.file.model.source(),
                            analysis::bytes_by_stack(state, analysis::live_measure::allocated)});
        r.unstacked.push_back(take_unstacked(s.file.model.source(), r.stacks.back().stacks));
        r.peaks.push_back(analysis::contents_at_peak(s.file.model, model_with_every_frame(s.file)));
        r.sides.push_back(std::move(s));
    }
    std::vector<analysis::category_breakdown> breakdowns;
    for (const auto& peak : r.peaks) {
        breakdowns.push_back(peak.categories);
    }
    r.categories = analysis::compare_categories(breakdowns);
    r.ordered = analysis::stacks_changed_most(r.stacks, count);
    std::vector<const analysis::device_model*> models;
    for (const auto& s : r.sides) {
        models.push_back(&s.file.model);
    }
    r.best = highest_reserved_peak(models);
    if (args.json) {
        print_json(r);
    } else {
        print_text(r, depth);
    }
    return exit_ok;
}

}  // namespace memtrail::cli

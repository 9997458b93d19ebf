// memtrail diff BASE OTHER... : what changed between snapshots (or ranks), in totals and per
// allocation stack.

#include <iostream>

#include "commands.hpp"
#include "common.hpp"
#include "memtrail/analysis/size_text.hpp"
#include "memtrail/analysis/stack_comparison.hpp"
#include "report_json.hpp"
#include "text_table.hpp"

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

}  // namespace

command_spec diff_spec() {
    return {"diff",
            "BASE OTHER... [--at EVENT|peak|end] [-n N] [--depth D] [--device N] [--all-frames] "
            "[--json]",
            "Compares snapshots (or the ranks of one job) with the first: totals, peaks and "
            "the allocation stacks whose live bytes changed most.",
            "",
            2,
            SIZE_MAX,
            {at_option(),
             device_option(),
             all_frames_option(),
             {"--count", "-n", "N", "stacks to list (default 10)", false},
             {"--depth", "", "D", "frames to print per stack (default 6)", false}}};
}

int run_diff(const parsed_arguments& args) {
    const size_t count =
        args.value("--count") ? parse_count_option("--count", *args.value("--count")) : 10;
    const size_t depth =
        args.value("--depth") ? parse_count_option("--depth", *args.value("--depth")) : 6;
    std::vector<side> sides;
    std::vector<analysis::stacks_in_snapshot> stacks;  // allocated bytes, per side
    for (const auto& path : args.positional) {
        side s{open_file(path, args, frames_shown(args)), {}, {}};
        s.at = resolve_at(s.file.model, args.value("--at"));
        const auto state = s.file.model.state_after(s.at.position);
        s.totals = analysis::totals_of(state);
        // The model shares its snapshot, so the pointer outlives moving the side.
        stacks.push_back({&s.file.model.source(),
                          analysis::bytes_by_stack(state, analysis::live_measure::allocated)});
        sides.push_back(std::move(s));
    }
    std::vector<const analysis::device_model*> models;
    for (const auto& s : sides) {
        models.push_back(&s.file.model);
    }
    const std::vector<analysis::matched_stack> ordered =
        analysis::stacks_changed_most(stacks, count);
    const size_t best = highest_reserved_peak(models);

    if (args.json) {
        json_writer json(std::cout);
        json.begin_object().key("files").begin_array();
        for (const auto& s : sides) {
            json.begin_object().field("path", s.file.path);
            json.key("at");
            write_moment(json, s.file.model, s.at);
            json.key("totals");
            write_totals(json, s.totals);
            json.key("peaks");
            write_peaks(json, s.file.model);
            json.end_object();
        }
        json.end_array().key("stacks").begin_array();
        for (const auto& change : ordered) {
            json.begin_object().key("bytes").begin_array();
            for (const uint64_t b : change.bytes) {
                json.value(b);
            }
            json.end_array().key("delta_from_base").begin_array();
            for (size_t i = 1; i < sides.size(); ++i) {
                json.value(change.change_from_first(i));
            }
            json.end_array().key("frames");
            write_stack(json, *stacks[change.first_holder].source, change.stack);
            json.end_object();
        }
        json.end_array()
            .key("highest_peak")
            .begin_object()
            .field("index", static_cast<uint64_t>(best))
            .field("path", sides[best].file.path)
            .end_object()
            .end_object();
        return exit_ok;
    }

    for (size_t i = 0; i < sides.size(); ++i) {
        std::cout << (i == 0 ? "base: " : "[" + std::to_string(i) + "]:  ") << sides[i].file.path
                  << ", at " << sides[i].at.label << "\n";
    }
    std::cout << "\n";
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

    std::cout << "\nallocation stacks that changed most (allocated bytes):\n";
    if (ordered.empty()) {
        std::cout << "  none\n";
    }
    for (const auto& change : ordered) {
        std::cout << "  " << format_bytes_delta(change.largest_change()) << "  ("
                  << format_bytes(change.bytes[0]);
        for (size_t i = 1; i < sides.size(); ++i) {
            std::cout << " -> " << format_bytes(change.bytes[i]);
        }
        std::cout << ")\n";
        for (const auto& line :
             stack_lines(*stacks[change.first_holder].source, change.stack, depth)) {
            std::cout << "        " << line << "\n";
        }
    }
    if (sides.size() > 2) {
        std::cout << "\n"
                  << (best == 0 ? "base" : "[" + std::to_string(best) + "]") << " ("
                  << sides[best].file.path << ") peaks highest: "
                  << format_bytes(peak_bytes(sides[best].file.model, analysis::series::reserved))
                  << " reserved\n";
    }
    return exit_ok;
}

}  // namespace memtrail::cli

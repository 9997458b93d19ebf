// memtrail top FILE... : the allocation stacks holding the most memory at one moment.

#include <algorithm>
#include <iostream>

#include "detail/commands.hpp"
#include "detail/common.hpp"
#include "detail/report_json.hpp"
#include "detail/text_table.hpp"
#include "memtrail/analysis/frame_filter.hpp"
#include "memtrail/analysis/frame_text.hpp"
#include "memtrail/analysis/rank_jobs.hpp"
#include "memtrail/analysis/size_text.hpp"
#include "memtrail/analysis/stack_comparison.hpp"

namespace memtrail::cli {
namespace {

using analysis::format_bytes;

struct rank_top {
    opened_file file;
    moment at;
    uint64_t total = 0;
};

}  // namespace

command_spec top_spec() {
    return {
        "top",
        "FILE... [--at EVENT|peak|end] [-n N] [--depth D] [--pending] [--device N] "
        "[--all-frames] [--json]\n"
        "   or: memtrail top --attach PID... [--once | --updates N] [--interval S] [-n N] "
        "[--json]",
        "The allocation stacks that hold the most memory at one moment, with their share of "
        "the live bytes. Several files (one per rank) are compared stack by stack.",
        "With --attach, running processes (by pid, recording with memtrail, of the same "
        "user) are watched live, refreshed every second (docs/live.md): reserved, allocated "
        "and outside-allocator memory as small curves, memory by meaning, the stacks that "
        "grew since attaching (-n of them), fragmentation, OOMs so far and the events their "
        "streams carry; one column per process. It stops when every process has exited "
        "(showing their last state), after --updates N (--once: 1), or on Ctrl-C. --json "
        "writes one JSON line per refresh.",
        1,
        SIZE_MAX,
        {{"--attach", "", "", "the arguments are pids of running processes to watch", false},
         {"--once", "", "", "with --attach: one refresh, then stop", false},
         {"--updates", "", "N", "with --attach: N refreshes, then stop", false},
         {"--interval", "", "SECONDS", "with --attach: time between refreshes (default 1)", false},
         at_option(),
         device_option(),
         all_frames_option(),
         {"--count", "-n", "N", "how many stacks to list (default 10)", false},
         depth_option(8),
         {"--pending", "", "", "count blocks freed but waiting for other streams too", false}}};
}

namespace {

// What top found in each file: the stacks holding the most, per rank (most bytes first).
struct top_found {
    std::vector<rank_top> ranks;
    std::vector<analysis::stacks_in_snapshot> stacks;
    size_t highest_peak = 0;  // the rank whose reserved memory peaks highest
};

void print_top_json(const top_found& found, size_t count) {
    const auto& ranks = found.ranks;
    const auto& stacks = found.stacks;
    const size_t best = found.highest_peak;
    json_writer json(std::cout);
    json.begin_object().key("ranks").begin_array();
    for (size_t i = 0; i < ranks.size(); ++i) {
        const rank_top& r = ranks[i];
        json.begin_object()
            .field("rank", static_cast<uint64_t>(i))
            .field("path", r.file.path)
            .field("device", r.file.model.device());
        json.key("at");
        write_moment(json, r.file.model, r.at);
        json.field("live_bytes", r.total).key("stacks").begin_array();
        for (size_t s = 0; s < std::min(count, stacks[i].stacks.size()); ++s) {
            const auto& entry = stacks[i].stacks[s];
            json.begin_object()
                .field("bytes", entry.bytes)
                .field("blocks", entry.blocks)
                .field("largest_block", entry.largest_block)
                .field("share", r.total == 0 ? 0.0
                                             : static_cast<double>(entry.bytes) /
                                                   static_cast<double>(r.total));
            json.key("frames");
            write_stack(json, r.file.model.source(), entry.stack);
            json.end_object();
        }
        json.end_array().end_object();
    }
    json.end_array()
        .key("highest_peak")
        .begin_object()
        .field("rank", static_cast<uint64_t>(best))
        .field("path", ranks[best].file.path)
        .end_object()
        .end_object();
}

void print_top_of_one(const top_found& found, size_t count, size_t depth,
                      analysis::live_measure measure) {
    const rank_top& r = found.ranks[0];
    const std::vector<analysis::stack_bytes>& by_stack = found.stacks[0].stacks;
    std::cout << r.file.path << ", device " << r.file.model.device() << ", at " << r.at.label
              << ": " << format_bytes(r.total)
              << (measure == analysis::live_measure::active ? " active" : " allocated") << " from "
              << by_stack.size() << " stacks\n";
    print_categories_line(model_with_every_frame(r.file), r.at);
    std::cout << "\n";
    for (size_t s = 0; s < std::min(count, by_stack.size()); ++s) {
        const auto& entry = by_stack[s];
        std::cout << "#" << s + 1 << "  " << format_bytes(entry.bytes) << "  ("
                  << percent(r.total == 0
                                 ? 0.0
                                 : static_cast<double>(entry.bytes) / static_cast<double>(r.total))
                  << ", " << entry.blocks << " blocks, largest "
                  << format_bytes(entry.largest_block) << ")\n";
        for (const auto& line : stack_lines(r.file.model.source(), entry.stack, depth)) {
            std::cout << "      " << line << "\n";
        }
    }
}

// Side by side: stacks matched by their text, ordered by the most any rank holds.
void print_top_side_by_side(const top_found& found, size_t count) {
    const auto& ranks = found.ranks;
    const auto& stacks = found.stacks;
    const size_t best = found.highest_peak;
    const std::vector<analysis::matched_stack> rows = analysis::largest_stacks(stacks, count);
    std::vector<std::string> columns = {"#"};
    for (size_t i = 0; i < ranks.size(); ++i) {
        columns.push_back("rank " + std::to_string(i));
    }
    columns.emplace_back("<innermost frame");
    columns.emplace_back("<your code");
    text_table table(columns);
    for (size_t row = 0; row < rows.size(); ++row) {
        std::vector<std::string> cells = {std::to_string(row + 1)};
        for (const uint64_t bytes : rows[row].bytes) {
            cells.push_back(format_bytes(bytes));
        }
        const snapshot::snapshot& source = *stacks[rows[row].first_holder].source;
        cells.push_back(innermost_frame(source, rows[row].stack));
        const snapshot::frame_id user = analysis::users_frame(source, rows[row].stack);
        const bool innermost_is_users = !source.stack_at(rows[row].stack).empty() &&
                                        source.stack_at(rows[row].stack).front() == user;
        cells.push_back(user == snapshot::no_id ? "-"
                        : innermost_is_users    ? "(the innermost frame)"
                                                : analysis::frame_label(source, user));
        table.add_row(cells);
    }
    std::vector<std::string> totals = {"all"};
    for (const auto& r : ranks) {
        totals.push_back(format_bytes(r.total));
    }
    table.add_row(totals);
    for (size_t i = 0; i < ranks.size(); ++i) {
        std::cout << "rank " << i << ": " << ranks[i].file.path << ", at " << ranks[i].at.label
                  << "\n";
    }
    std::cout << "\n";
    table.print(std::cout);
    const auto& model = ranks[best].file.model;
    std::cout << "\nrank " << best << " (" << analysis::file_name_of(ranks[best].file.path)
              << ") peaks highest: " << format_bytes(peak_bytes(model, analysis::series::reserved))
              << " reserved\n";
}

}  // namespace

int run_top(const parsed_arguments& args) {
    if (args.has("--attach")) {
        return run_top_attached(args);
    }
    for (const char* live_only : {"--once", "--updates", "--interval"}) {
        if (args.has(live_only)) {
            throw usage_error(std::string(live_only) + " is for --attach (watching processes)");
        }
    }
    const size_t count =
        args.value("--count") ? parse_count_option("--count", *args.value("--count")) : 10;
    const size_t depth = depth_of(args, 8);
    const auto measure =
        args.has("--pending") ? analysis::live_measure::active : analysis::live_measure::allocated;
    top_found found;
    std::vector<rank_top>& ranks = found.ranks;
    std::vector<analysis::stacks_in_snapshot>& stacks = found.stacks;  // most bytes first
    for (const auto& path : args.positional) {
        rank_top r{open_file(path, args, frames_shown(args)), {}, 0};
        r.at = resolve_at(r.file.model, args.value("--at"));
        // The model shares its snapshot, so the pointer outlives moving the rank.
        stacks.push_back(
            {&r.file.model.source(),
             analysis::bytes_by_stack(r.file.model.state_after(r.at.position), measure)});
        r.total = analysis::total_bytes(stacks.back().stacks);
        ranks.push_back(std::move(r));
    }
    std::vector<const analysis::device_model*> models;
    for (const auto& r : ranks) {
        models.push_back(&r.file.model);
    }
    found.highest_peak = highest_reserved_peak(models);

    if (args.json) {
        print_top_json(found, count);
    } else if (ranks.size() == 1) {
        print_top_of_one(found, count, depth, measure);
    } else {
        print_top_side_by_side(found, count);
    }
    return exit_ok;
}

}  // namespace memtrail::cli

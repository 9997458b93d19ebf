// memtrail report FILE... -o report.html : one self-contained HTML page of what the other
// commands say about the files (summary, oom with its remedies, categories, top, ranks) and the
// pictures they lack in text (the timeline stacked by category, the segment map and the flame
// graph at the peak). The commands' own JSON is embedded as they print it, so the page's numbers
// are the CLI's.

#include <sstream>

#include "detail/command_capture.hpp"
#include "detail/commands.hpp"
#include "detail/common.hpp"
#include "detail/kept_loads.hpp"
#include "detail/rank_inputs.hpp"
#include "detail/report_page.hpp"
#include "detail/report_pictures.hpp"
#include "memtrail/analysis/categories.hpp"
#include "memtrail/analysis/flame.hpp"
#include "memtrail/analysis/oom_report.hpp"

namespace memtrail::cli {
namespace {

constexpr const char* top_stacks_shown = "20";

// The options every embedded command gets: the file's device.
std::vector<std::string> shared_arguments(int device) {
    return {"--device", std::to_string(device)};
}

// The frames the user chose, for the embedded commands that print stacks (top, oom); summary
// and categories take no --all-frames.
std::vector<std::string> frames_arguments(const parsed_arguments& args) {
    return args.has("--all-frames") ? std::vector<std::string>{"--all-frames"}
                                    : std::vector<std::string>{};
}

std::string output_of(std::string_view command, const std::string& path,
                      const std::vector<std::string>& shared, std::vector<std::string> options) {
    std::vector<std::string> arguments = {path};
    arguments.insert(arguments.end(), shared.begin(), shared.end());
    arguments.insert(arguments.end(), options.begin(), options.end());
    return command_output(command, arguments);
}

// The JSON carries the remedies with their words; the text (for the blockers and holders) skips
// the what-if replays, which would only be made again.
std::vector<std::string> oom_options(const parsed_arguments& args, bool json) {
    std::vector<std::string> options = frames_arguments(args);
    if (args.has("--no-remedies") || !json) {
        options.emplace_back("--no-remedies");
    }
    if (json) {
        options.emplace_back("--json");
    }
    return options;
}

// A command's JSON as the value of `key`, as the command printed it.
void embed(json_writer& json, std::string_view key, const std::string& text) {
    json.key(key).raw_value(text);
}

void write_facts(json_writer& json, const opened_file& file) {
    const snapshot::snapshot& source = file.model.source();
    json.begin_object()
        .field("kind", file_kind_name(file.kind))
        .field("producer", source.info.producer)
        .field("host", source.info.host)
        .field("pid", source.info.pid)
        .field("time_ns", source.info.time_ns);
    json.key("devices").begin_array();
    for (const auto& d : source.info.devices) {
        json.begin_object()
            .field("device", static_cast<int>(d.device))
            .field("name", d.name)
            .field("total_memory", d.total_memory)
            .field("compute_capability", std::to_string(d.major) + "." + std::to_string(d.minor))
            .end_object();
    }
    const snapshot::allocator_settings& s = source.settings;
    json.end_array().key("settings").begin_object().field("conf", s.conf);
    json.field("expandable_segments", s.expandable_segments)
        .field("max_split_size", s.max_split_size)
        .field("garbage_collection_threshold", s.garbage_collection_threshold);
    for (const auto& [name, value] : s.other) {
        json.field(name, value);
    }
    json.end_object().end_object();
}

// What the page draws that no command prints: the file's facts and the pictures at the peak.
void write_pictures(json_writer& json, const opened_file& file) {
    const analysis::device_model& model = file.model;
    const moment peak = resolve_at(model, "peak");
    json.field("path", file.path).field("device", model.device()).field("peak_label", peak.label);
    json.key("facts");
    write_facts(json, file);
    const analysis::device_model every_frame = model_with_every_frame(file);
    json.key("timeline");
    write_timeline(json, every_frame, *categories_of(every_frame), peak.position);
    json.key("segment_map");
    write_segment_map(json, model.state_after(peak.position));
    json.key("flame");
    write_flame(json, analysis::flame_at(model, peak.position, analysis::live_measure::allocated));
}

// One file's part of the data: the pictures, then the commands' JSON, and, when the report has
// several files, the file's rank summary added to `ranks`. The file is loaded and indexed once:
// the commands open it as they would alone, and find it kept. It is released before the next
// file, so at most one large trace is in memory at a time.
void write_file(json_writer& json, const std::string& path, const parsed_arguments& args,
                std::vector<analysis::rank_summary>& ranks) {
    const kept_loads kept;
    const opened_file file = open_file(path, args, frames_shown(args));
    json.begin_object();
    write_pictures(json, file);
    const std::vector<std::string> shared = shared_arguments(file.model.device());
    embed(json, "summary", output_of("summary", path, shared, {"--at", "peak", "--json"}));
    embed(json, "categories", output_of("categories", path, shared, {"--at", "peak", "--json"}));
    std::vector<std::string> top_options = {"--at", "peak", "-n", top_stacks_shown, "--json"};
    const std::vector<std::string> frames = frames_arguments(args);
    top_options.insert(top_options.end(), frames.begin(), frames.end());
    embed(json, "top", output_of("top", path, shared, top_options));
    if (!analysis::oom_entries(file.model).empty()) {
        embed(json, "oom", output_of("oom", path, shared, oom_options(args, true)));
        json.field("oom_text", output_of("oom", path, shared, oom_options(args, false)));
    } else {
        json.key("oom").null().key("oom_text").null();
    }
    json.end_object();
    if (args.positional.size() > 1) {
        ranks.push_back(summarize_opened(file, args));
    }
}

}  // namespace

command_spec report_spec() {
    return {
        "report",
        "FILE... -o OUT.html [--device N] [--all-frames] [--no-remedies]",
        "One self-contained HTML page to open in any browser, offline, or attach to a bug "
        "report: the file's facts (device, totals, peaks, settings), the OOM verdict with "
        "its remedies when the trace has one, the timeline stacked by category with the "
        "peak and the OOM marked, the segment map, the categories, the top stacks and a "
        "flame graph at the peak; for several files of one job, the ranks table.",
        "The page embeds what summary, oom, categories, top and ranks print with --json, so "
        "its numbers are theirs, at the peak of allocated memory (--at peak). The timeline "
        "is cut into " +
            std::to_string(report_timeline_columns) +
            " columns (each the min and max of its entries), so the page stays a few MB "
            "however long the trace. Each FILE is read and indexed once, one at a time; "
            "standard input ('-') is not accepted.\n",
        1,
        SIZE_MAX,
        {{"--output", "-o", "OUT.html", "where to write the page ('-': standard output)", false},
         device_option(),
         all_frames_option(),
         {"--no-remedies", "", "", "skip the what-if replays that check an OOM's remedies", false}},
        false};
}

int run_report(const parsed_arguments& args) {
    const auto output = args.value("--output");
    if (!output) {
        throw usage_error("-o OUT.html is required (the page's path, or - for standard output)");
    }
    for (const std::string& path : args.positional) {
        if (path == standard_stream_path) {
            throw usage_error(
                "FILE '-': the report cannot read standard input; save the snapshot to a file "
                "first");
        }
    }
    std::ostringstream data;
    json_writer json(data);
    json.begin_object().field("memtrail_version", MEMTRAIL_VERSION).key("files").begin_array();
    std::vector<analysis::rank_summary> ranks;
    for (const std::string& path : args.positional) {
        write_file(json, path, args, ranks);
    }
    json.end_array();
    if (ranks.size() > 1) {
        std::ostringstream ranks_json;
        print_ranks(ranks_json, ranks, true);
        embed(json, "ranks", std::move(ranks_json).str());
    } else {
        json.key("ranks").null();
    }
    json.end_object();
    const std::string data_json = std::move(data).str();
    write_output(*output, output_content::text,
                 [&](std::ostream& out) { write_report_page(out, data_json); });
    return exit_ok;
}

}  // namespace memtrail::cli

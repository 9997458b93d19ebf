// memtrail summarize FILE... [-o DIR] : each snapshot's rank summary (docs/ranks.md), written
// beside it as FILE.summary.json or into DIR; `ranks` compares thousands of them.

#include <filesystem>
#include <iostream>
#include <span>
#include <sstream>

#include "detail/commands.hpp"
#include "detail/common.hpp"
#include "detail/rank_inputs.hpp"
#include "detail/summary_json.hpp"
#include "memtrail/snapshot/output_file.hpp"

namespace memtrail::cli {

command_spec summarize_spec() {
    return {"summarize",
            "FILE... [-o DIR] [--device N] [-j N] [--all-frames]",
            "Writes each snapshot's rank summary, a small JSON file (kilobytes, whatever the "
            "trace's length): identity, peaks and when, categories at the peak and at each OOM, "
            "fragmentation, OOM verdicts, top folded stacks with stable hashes, hashes of the "
            "sequence of allocations and a downsampled memory curve (docs/ranks.md).",
            "Each summary is written beside its snapshot as FILE.summary.json, or into DIR with "
            "-o. FILE may be a folder: its snapshots (.pickle, .pkl, .memtrail, .zst) are "
            "summarized, recursively. `memtrail ranks` reads summaries as it reads snapshots, "
            "and uses a summary beside a snapshot instead of reading the snapshot again.\n",
            1,
            SIZE_MAX,
            {{"--output", "-o", "DIR", "write the summaries into DIR instead of beside each file",
              false},
             device_option(),
             workers_option(),
             all_frames_option()},
            false};
}

int run_summarize(const parsed_arguments& args) {
    const auto folder = args.value("--output");
    if (folder) {
        std::error_code error;
        std::filesystem::create_directories(*folder, error);
        if (!std::filesystem::is_directory(*folder)) {
            throw usage_error("--output: '" + *folder + "' is not a folder and cannot be made one");
        }
    }
    std::vector<std::string> paths;
    for (const std::string& path : rank_input_paths(args.positional)) {
        if (path == standard_stream_path) {
            throw usage_error(
                "'-' (standard input) has no place to write its summary beside; "
                "save the snapshot to a file");
        }
        if (!path.ends_with(summary_extension)) {
            paths.push_back(path);
        }
    }
    std::vector<std::string> targets;
    for (const std::string& path : paths) {
        targets.push_back(summary_path_for(path, folder));
    }
    // Computed afresh, never read from beside the files: summarize refreshes them. Each is
    // written by the worker that made it and not kept, so memory does not grow with the files.
    for_each_summary(
        paths, args, workers_of(args), false, [&](size_t i, analysis::rank_summary&& summary) {
            std::ostringstream text;
            write_summary_json(text, summary);
            const std::string bytes = std::move(text).str();
            snapshot::write_output_file(
                targets[i],
                std::span(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size()));
        });
    for (const std::string& target : targets) {
        std::cout << target << "\n";
    }
    return exit_ok;
}

}  // namespace memtrail::cli

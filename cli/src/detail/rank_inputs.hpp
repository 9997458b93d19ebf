#pragma once
// What `ranks` and `summarize` read: snapshots, rank summaries and folders of them; summaries
// computed where missing, on every core, each worker holding one snapshot at a time.

#include <cstddef>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "arguments.hpp"
#include "common.hpp"
#include "memtrail/analysis/rank_summary.hpp"

namespace memtrail::cli {

// The files the arguments name: files as given; folders searched recursively for snapshots
// (.pickle, .pkl, .memtrail, .zst) and summaries (.summary.json), sorted by path. A snapshot
// and its summary beside it (x.pickle, x.pickle.summary.json) are one input: the snapshot.
// Throws usage_error for a path that does not exist, naming it.
std::vector<std::string> rank_input_paths(const std::vector<std::string>& arguments);

// Where summarize writes the summary of `snapshot_path`: beside it, or in `folder`.
std::string summary_path_for(const std::string& snapshot_path,
                             const std::optional<std::string>& folder);

// The summary of one snapshot (the device --device names, else the first with a trace; its
// stacks with every frame under --all-frames). Throws snapshot::load_error.
analysis::rank_summary summarize_snapshot(const std::string& path, const parsed_arguments& args);

// The summary of a file already open (`memtrail report`'s, as `ranks` would make it from the
// file's path): from the model of every frame, which model_with_every_frame gives.
analysis::rank_summary summarize_opened(const opened_file& file, const parsed_arguments& args);

// The summary of each path, in order: a summary file read; with `reuse`, a snapshot's summary
// read from beside it when one is there, no older than the snapshot, of the device and the
// frames asked;
// else computed, on `workers` threads. Throws the first file's error, in the order given.
std::vector<analysis::rank_summary> summaries_of(const std::vector<std::string>& paths,
                                                 const parsed_arguments& args, size_t workers,
                                                 bool reuse = true);

// The same, each summary handed to `use` (with its index in `paths`) as soon as it is made,
// from the worker that made it: summarize writes each and keeps none.
void for_each_summary(const std::vector<std::string>& paths, const parsed_arguments& args,
                      size_t workers, bool reuse,
                      const std::function<void(size_t, analysis::rank_summary&&)>& use);

// --jobs N: how many files are summarized at once (default: the cores there are).
option_spec workers_option();
size_t workers_of(const parsed_arguments& args);

}  // namespace memtrail::cli

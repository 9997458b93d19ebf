#pragma once
// The subcommands: each has a spec (usage, options, help) and a run function returning the
// exit code.

#include <iosfwd>
#include <string>
#include <string_view>
#include <vector>

#include "arguments.hpp"
#include "common.hpp"
#include "json_writer.hpp"
#include "memtrail/analysis/rank_summary.hpp"

namespace memtrail::cli {

struct command {
    command_spec (*spec)();
    int (*run)(const parsed_arguments& args);
};

command_spec summary_spec();
int run_summary(const parsed_arguments& args);
command_spec summarize_spec();
int run_summarize(const parsed_arguments& args);
command_spec ranks_spec();
int run_ranks(const parsed_arguments& args);
// What `ranks` prints for the ranks of `summaries` (as text, or with `json` as JSON), its
// warnings about the job on standard error.
void print_ranks(std::ostream& out, const std::vector<analysis::rank_summary>& summaries,
                 bool json);
command_spec segments_spec();
int run_segments(const parsed_arguments& args);
command_spec categories_spec();
int run_categories(const parsed_arguments& args);
// One line for other reports, after `lead`: "by meaning, at LABEL: activation 2.3GiB, parameter
// 636MiB, ..."; nothing when no block of the trace has a known category.
void print_categories_line(const analysis::device_model& model, const moment& at,
                           std::string_view lead = "");
// The same as a JSON object: each category's name and its bytes at `at`.
void write_categories(json_writer& json, const analysis::device_model& model, const moment& at);
command_spec top_spec();
int run_top(const parsed_arguments& args);
// top --attach PID...: running processes watched live (command_top_live.cpp).
int run_top_attached(const parsed_arguments& args);
command_spec oom_spec();
int run_oom(const parsed_arguments& args);
command_spec diff_spec();
int run_diff(const parsed_arguments& args);
command_spec check_spec();
int run_check(const parsed_arguments& args);
command_spec export_spec();
int run_export(const parsed_arguments& args);
command_spec report_spec();
int run_report(const parsed_arguments& args);
command_spec replay_spec();
int run_replay_command(const parsed_arguments& args);
command_spec run_spec();
int run_run(const parsed_arguments& args);
command_spec snapshot_spec();
int run_snapshot(const parsed_arguments& args);
command_spec whatif_spec();
int run_whatif(const parsed_arguments& args);

// All subcommands in the order `memtrail --help` lists them.
const std::vector<std::pair<std::string, command>>& all_commands();

}  // namespace memtrail::cli

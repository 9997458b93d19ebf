#include "detail/commands.hpp"

namespace memtrail::cli {

const std::vector<std::pair<std::string, command>>& all_commands() {
    static const std::vector<std::pair<std::string, command>> commands = {
        {"summary", {summary_spec, run_summary}},
        {"ranks", {ranks_spec, run_ranks}},
        {"summarize", {summarize_spec, run_summarize}},
        {"segments", {segments_spec, run_segments}},
        {"top", {top_spec, run_top}},
        {"categories", {categories_spec, run_categories}},
        {"oom", {oom_spec, run_oom}},
        {"diff", {diff_spec, run_diff}},
        {"check", {check_spec, run_check}},
        {"export", {export_spec, run_export}},
        {"report", {report_spec, run_report}},
        {"replay", {replay_spec, run_replay_command}},
        {"whatif", {whatif_spec, run_whatif}},
        {"run", {run_spec, run_run}},
        {"snapshot", {snapshot_spec, run_snapshot}},
    };
    return commands;
}

}  // namespace memtrail::cli

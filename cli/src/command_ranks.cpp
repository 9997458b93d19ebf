// memtrail ranks PATH... : which ranks of a distributed job differ, and why, from their rank
// summaries (computed where missing, on every core): files grouped into jobs, every rank's
// robust distance from the job's median, ranks that did exactly the same, and each outlier
// explained against the median rank by category and by stack. The analysis is
// analysis::analyze_ranks; this file reads the inputs and ranks_output.cpp prints.

#include <iostream>

#include "detail/commands.hpp"
#include "detail/common.hpp"
#include "detail/rank_inputs.hpp"
#include "detail/ranks_output.hpp"
#include "memtrail/analysis/rank_outliers.hpp"

namespace memtrail::cli {

command_spec ranks_spec() {
    return {"ranks",
            "PATH... [--device N] [-j N] [--all-frames] [--json]",
            "Which ranks of a distributed job differ, and why. PATH is a snapshot, a rank "
            "summary (memtrail summarize) or a folder of them, searched recursively. One row per "
            "rank: peak allocated and reserved memory and when, allocated and reserved at the "
            "end, allocations, device allocations (segments allocated or mapped), OOMs and its "
            "distance from the job's median; the ranks that did exactly the same (equal "
            "sequences of allocations) and where the others depart from them; then every "
            "outlier explained against the median rank, by category and by stack, each at its "
            "own peak allocated.",
            "Summaries missing are computed on every core (-j), each worker holding one snapshot "
            "in memory; a summary beside a snapshot (FILE.summary.json, no older than it) is used "
            "instead of reading the snapshot again. Files are grouped into jobs by the job id "
            "their snapshots recorded, else by their names (job__rank3.pickle and "
            "job__rank4.pickle are one job's), producer, devices, allocator settings, process and "
            "times, and the stacks they recorded; files of different jobs are reported job by "
            "job, with a warning. A file's rank is the one its snapshot recorded, else the number "
            "its name names (rank3.memtrail, job__rank_3.pickle, snap-r3, trace_3.pickle, "
            "run/rank3/snapshot.pickle) when every file of its job names a different one; "
            "otherwise the job's files are ranks 0, 1, 2, ... in the order given. A rank's "
            "distance is, over peak reserved, peak allocated and each category at the peak, the "
            "most robust deviations (1.4826 x the median absolute deviation, at least 5% of the "
            "median and 1 MiB) it stands from the job's median; beyond 3.5 it is an outlier. "
            "Rows are listed by rank, or the 20 farthest first past 20 ranks; times count from "
            "each rank's first trace entry.\n",
            1,
            SIZE_MAX,
            {device_option(), workers_option(), all_frames_option()}};
}

void print_ranks(std::ostream& out, const std::vector<analysis::rank_summary>& summaries,
                 bool json) {
    const analysis::ranks_analysis ranks = analysis::analyze_ranks(summaries);
    const std::vector<std::string> warnings = job_warnings(ranks, summaries);
    for (const std::string& w : warnings) {
        std::cerr << "memtrail ranks: warning: " << w << "\n";
    }
    if (json) {
        print_ranks_json(out, ranks, summaries, warnings);
    } else {
        print_ranks_text(out, ranks, summaries);
    }
}

int run_ranks(const parsed_arguments& args) {
    const std::vector<std::string> paths = rank_input_paths(args.positional);
    print_ranks(std::cout, summaries_of(paths, args, workers_of(args)), args.json);
    return exit_ok;
}

}  // namespace memtrail::cli

#pragma once
// Many ranks at once, from their rank summaries (docs/ranks.md): summary files read, folders
// searched for summaries and snapshots, snapshots without a summary summarized on every core
// with analysis::summarize_rank (what `memtrail ranks` does), all of it on threads of its own so
// the window keeps drawing; then ranked by analysis::analyze_ranks, as `memtrail ranks` ranks.

#include <atomic>
#include <cstddef>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "memtrail/analysis/rank_outliers.hpp"
#include "memtrail/analysis/rank_summary.hpp"

namespace memtrail::viewer {

// Whether the viewer opens `path` as rank summaries: a summary file (*.summary.json) or a
// folder (of summaries or of snapshots).
bool opens_as_rank_summaries(const std::string& path);

// The files `paths` name: files as given; folders searched recursively for summaries and
// snapshots (.pickle, .pkl, .memtrail, .zst), sorted by path, a snapshot with its summary beside
// it (x.pickle, x.pickle.summary.json, no older than x.pickle) taken as that summary. Throws
// snapshot::load_error for a path that is not there or a folder that holds neither.
std::vector<std::string> rank_summary_inputs(const std::vector<std::string>& paths);

// The summaries read or made, the files that could not be, and their ranking.
struct rank_summary_set {
    std::vector<analysis::rank_summary> summaries;
    std::vector<std::string> files;   // parallel: the file each came from (summary or snapshot)
    std::vector<std::string> errors;  // "PATH: why", one per file that gave no summary
    analysis::ranks_analysis ranking;
};

// `a` and `b` together, ranked again (summaries opened one after another form one set).
rank_summary_set merged(const rank_summary_set& a, const rank_summary_set& b);

// Where rank `summary`'s snapshot is: the path it records, else (a summary beside its snapshot
// that was moved with it) the summary file's name without ".summary.json"; "" when neither is
// there.
std::string snapshot_of(const rank_summary_set& set, size_t summary);

// Reads or makes the summaries of `paths` on `workers` threads, then ranks them.
class rank_summaries_job {
  public:
    rank_summaries_job(std::vector<std::string> paths, size_t workers);
    // Waits for the threads: a snapshot being summarized cannot be interrupted halfway.
    ~rank_summaries_job();
    rank_summaries_job(const rank_summaries_job&) = delete;
    rank_summaries_job& operator=(const rank_summaries_job&) = delete;

    // What was asked, for the progress line ("3 paths" or the one path).
    const std::string& title() const { return title_; }
    bool done() const { return done_.load(); }
    // Files found (0 until the folders are searched) and those read or summarized.
    size_t files_total() const { return total_.load(); }
    size_t files_done() const { return finished_.load(); }
    // After done(): the summaries, or nullptr with error() saying why nothing could be read.
    std::shared_ptr<const rank_summary_set> result() const { return done() ? result_ : nullptr; }
    const std::string& error() const { return error_; }

  private:
    void run(const std::vector<std::string>& paths, size_t workers);

    std::string title_;
    std::atomic<size_t> total_{0};
    std::atomic<size_t> finished_{0};
    std::shared_ptr<const rank_summary_set> result_;
    std::string error_;
    std::atomic<bool> done_{false};
    std::thread thread_;
};

}  // namespace memtrail::viewer

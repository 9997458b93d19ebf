#pragma once
// The remedies of a file's OOMs, each proven by a what-if replay: asked of `memtrail oom --json`
// in a process of its own (the viewer never links the allocator), on a thread of its own so the
// UI keeps drawing while the replays run.

#include <sys/types.h>

#include <atomic>
#include <cstddef>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "memtrail/analysis/oom_remedy_text.hpp"

namespace memtrail::viewer {

// What `memtrail oom` found for one OOM entry.
struct entry_remedies {
    bool checked = false;  // the original settings, replayed, fail at this entry
    std::vector<analysis::remedy_outcome> tried;
};

class remedies_job {
  public:
    // Starts `memtrail oom --json --blockers 0 --device DEVICE PATH`; the memtrail beside this
    // program's executable, else the one on PATH.
    remedies_job(std::string path, int device);
    // Stops the replays (the child is killed) and waits for the thread.
    ~remedies_job();
    remedies_job(const remedies_job&) = delete;
    remedies_job& operator=(const remedies_job&) = delete;

    bool done() const { return done_.load(); }
    int device() const { return device_; }
    // After done(): the remedies by OOM entry (a trace index), or an empty map and error().
    const std::map<size_t, entry_remedies>& by_entry() const { return by_entry_; }
    const std::string& error() const { return error_; }

  private:
    void run();

    std::string path_;
    int device_;
    std::map<size_t, entry_remedies> by_entry_;
    std::string error_;
    std::mutex child_mutex_;
    pid_t child_ = -1;
    bool stopping_ = false;
    std::atomic<bool> done_{false};
    std::thread thread_;
};

// Reads `memtrail oom --json`'s output into remedies by entry; throws std::runtime_error naming
// what is missing. Its own function so that tests can feed it the CLI's real output.
std::map<size_t, entry_remedies> parse_oom_remedies(const std::string& json);

}  // namespace memtrail::viewer

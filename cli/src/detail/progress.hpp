#pragma once
// Progress of a long step (loading, replaying, writing) on standard error, only when standard
// error is a terminal: a pipe or a file never gets it. One line, redrawn at most ten times a
// second by a thread of its own with the time spent so far, and erased when the step ends.

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <string>
#include <thread>

namespace memtrail::cli {

class progress_line {
  public:
    // Shows "memtrail: WHAT... 1.2 s" while the object lives; does nothing when standard error
    // is not a terminal.
    explicit progress_line(std::string what);
    progress_line(const progress_line&) = delete;
    progress_line& operator=(const progress_line&) = delete;
    ~progress_line();

  private:
    void draw(std::chrono::steady_clock::duration elapsed) const;

    std::string what_;
    std::mutex mutex_;
    std::condition_variable stop_requested_;
    bool stopping_ = false;
    std::thread drawer_;
};

}  // namespace memtrail::cli

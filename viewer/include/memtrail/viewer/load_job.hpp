#pragma once
// Loads a document on a thread of its own so the UI keeps drawing (and shows the progress).

#include <memory>
#include <string>
#include <thread>

#include "memtrail/viewer/document.hpp"

namespace memtrail::viewer {

class load_job {
  public:
    load_job(std::string path, analysis::frame_visibility frames);
    // Waits for the thread: reading cannot be interrupted halfway.
    ~load_job();
    load_job(const load_job&) = delete;
    load_job& operator=(const load_job&) = delete;

    const std::string& path() const { return path_; }
    bool done() const { return done_.load(); }
    float fraction() const { return progress_.fraction.load(); }
    const char* stage() const;
    // After done(): the document, or nullptr with error() saying why.
    std::shared_ptr<const document> result() const { return done() ? result_ : nullptr; }
    const std::string& error() const { return error_; }

  private:
    std::string path_;
    load_progress progress_;
    std::shared_ptr<const document> result_;
    std::string error_;
    std::atomic<bool> done_{false};
    std::thread thread_;
};

}  // namespace memtrail::viewer

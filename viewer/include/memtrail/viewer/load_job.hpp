#pragma once
// Loads a document on a thread of its own so the UI keeps drawing (and shows the progress).

#include <cstdint>
#include <memory>
#include <string>
#include <thread>

#include "memtrail/viewer/document.hpp"

namespace memtrail::viewer {

// Where a load may be told to wait (for a screenshot of that moment).
enum class load_hold : uint8_t { none, at_preview };

class load_job {
  public:
    load_job(std::string path, analysis::frame_visibility frames, load_hold hold = load_hold::none);
    // Waits for the thread (releasing a held load): reading cannot be interrupted halfway.
    ~load_job();
    load_job(const load_job&) = delete;
    load_job& operator=(const load_job&) = delete;

    const std::string& path() const { return path_; }
    bool done() const { return done_.load(); }
    float fraction() const { return progress_.fraction.load(); }
    const char* stage() const;
    // The first picture (the device models' curves) once the models are built, else nullptr.
    std::shared_ptr<const load_preview> preview() const { return progress_.preview(); }
    // Lets a load held at its preview go on.
    void release() { progress_.release(); }
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

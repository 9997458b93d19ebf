#pragma once
// File > Attach: a popup listing the processes of this user that record with memtrail (their
// endpoints, docs/live.md), with pid and command line, and a pid box; File > Save received: a
// popup asking where to write what an attached tab received.

#include <sys/types.h>

#include <filesystem>
#include <string>
#include <vector>

#include "memtrail/viewer/attachable_processes.hpp"

namespace memtrail::viewer {

class attach_dialog {
  public:
    // Lists the processes in `folder` and asks for the popup to open on the next draw().
    void open(const std::filesystem::path& folder);
    // Draws the popup when open; returns true and sets `chosen` when the user picked a process.
    bool draw(pid_t& chosen);
    // The processes listed, and why none could be (a folder not safe to use).
    const std::vector<attachable_process>& listed() const { return processes_; }
    const std::string& error() const { return error_; }

  private:
    void list();
    std::filesystem::path folder_;
    std::vector<attachable_process> processes_;
    std::string error_;
    bool open_requested_ = false;
    int selected_ = -1;
    char pid_box_[16] = {};
};

class save_dialog {
  public:
    // Asks for the popup to open on the next draw(), the path box holding `suggested`.
    void open(const std::string& suggested);
    // Draws the popup when open; returns true and sets `path` when the user chose one.
    bool draw(std::string& path);
    // Shown in the popup under the path box (the last save's result).
    void set_message(std::string message) { message_ = std::move(message); }

  private:
    bool open_requested_ = false;
    std::string message_;
    char path_box_[1024] = {};
};

}  // namespace memtrail::viewer

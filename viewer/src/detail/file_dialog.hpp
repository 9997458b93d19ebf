#pragma once
// An ImGui "Open" popup: a path box plus a directory listing of the folders and the snapshot
// files (a checkbox lists every file). There is no native file dialog among the dependencies, so
// the viewer brings this small one.

#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

namespace memtrail::viewer {

// Whether the dialog lists `file_name` without "All files": the names snapshots are saved under
// (.memtrail, .memtrail.zst, .pickle, .pkl; any case) and rank summaries' (.summary.json). Files
// are still recognised by content when opened, so a snapshot under another name opens from "All
// files" or the path box.
bool is_snapshot_file_name(std::string_view file_name);

class file_dialog {
  public:
    // Asks for the popup to open on the next draw().
    void open();
    // Draws the popup when open; returns true and sets `chosen` when the user picked a file.
    bool draw(std::string& chosen);

  private:
    void list_directory();

    struct entry {
        std::string name;
        bool is_directory = false;
        uintmax_t size = 0;
    };
    bool open_requested_ = false;
    std::filesystem::path directory_;
    std::vector<entry> entries_;
    bool show_all_files_ = false;
    std::string error_;
    char path_box_[1024] = {};
    int selected_ = -1;
};

}  // namespace memtrail::viewer

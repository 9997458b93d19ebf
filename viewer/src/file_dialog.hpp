#pragma once
// An ImGui "Open" popup: a path box plus a directory listing. There is no native file dialog
// among the dependencies, so the viewer brings this small one.

#include <filesystem>
#include <string>
#include <vector>

namespace memtrail::viewer {

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
    std::string error_;
    char path_box_[1024] = {};
    int selected_ = -1;
};

}  // namespace memtrail::viewer

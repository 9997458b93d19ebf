#include "detail/file_dialog.hpp"

#include "detail/format.hpp"

#include <imgui.h>

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <system_error>

namespace memtrail::viewer {

namespace {

constexpr const char* popup_name = "Open snapshot";

void copy_to_box(const std::string& text, char* box, size_t capacity) {
    std::snprintf(box, capacity, "%s", text.c_str());
}

bool ends_with_ignoring_case(std::string_view text, std::string_view suffix) {
    return text.size() >= suffix.size() &&
           std::equal(suffix.begin(), suffix.end(), text.end() - suffix.size(), [](char a, char b) {
               return std::tolower(static_cast<unsigned char>(a)) ==
                      std::tolower(static_cast<unsigned char>(b));
           });
}

}  // namespace

bool is_snapshot_file_name(std::string_view file_name) {
    for (const std::string_view suffix :
         {".memtrail", ".memtrail.zst", ".pickle", ".pkl", ".summary.json"}) {
        if (ends_with_ignoring_case(file_name, suffix)) {
            return true;
        }
    }
    return false;
}

void file_dialog::open() {
    open_requested_ = true;
    if (directory_.empty()) {
        std::error_code ignored;
        directory_ = std::filesystem::current_path(ignored);
    }
    list_directory();
}

void file_dialog::list_directory() {
    entries_.clear();
    error_.clear();
    selected_ = -1;
    copy_to_box(directory_.string() + "/", path_box_, sizeof path_box_);
    std::error_code error;
    for (const auto& item : std::filesystem::directory_iterator(directory_, error)) {
        std::error_code ignored;
        entry e;
        e.name = item.path().filename().string();
        e.is_directory = item.is_directory(ignored);
        if (!e.is_directory && !show_all_files_ && !is_snapshot_file_name(e.name)) {
            continue;
        }
        e.size = e.is_directory ? 0 : item.file_size(ignored);
        entries_.push_back(std::move(e));
    }
    if (error) {
        error_ = error.message();
    }
    std::sort(entries_.begin(), entries_.end(), [](const entry& a, const entry& b) {
        return a.is_directory != b.is_directory ? a.is_directory : a.name < b.name;
    });
}

bool file_dialog::draw(std::string& chosen) {
    if (open_requested_) {
        ImGui::OpenPopup(popup_name);
        open_requested_ = false;
    }
    const ImVec2 display = ImGui::GetIO().DisplaySize;
    ImGui::SetNextWindowSize(ImVec2(display.x * 0.6f, display.y * 0.7f), ImGuiCond_Appearing);
    if (!ImGui::BeginPopupModal(popup_name)) {
        return false;
    }
    bool picked = false;
    auto choose = [&](const std::filesystem::path& path) {
        std::error_code ignored;
        if (std::filesystem::is_directory(path, ignored)) {
            directory_ = std::filesystem::weakly_canonical(path, ignored);
            list_directory();
            return;
        }
        chosen = path.string();
        picked = true;
    };

    ImGui::SetNextItemWidth(-1);
    if (ImGui::InputText("##path", path_box_, sizeof path_box_,
                         ImGuiInputTextFlags_EnterReturnsTrue)) {
        choose(path_box_);
    }
    if (ImGui::Button("Up")) {
        choose(directory_.parent_path());
    }
    ImGui::SameLine();
    if (ImGui::Checkbox("All files", &show_all_files_)) {
        list_directory();
    }
    ImGui::SameLine();
    ImGui::TextDisabled("%s", !error_.empty()   ? error_.c_str()
                              : show_all_files_ ? "double-click to open"
                                                : "snapshots (.memtrail, .memtrail.zst, .pickle, "
                                                  ".pkl) and rank summaries (.summary.json); "
                                                  "double-click to open");

    // Acted on after the listing: choosing a directory replaces entries_ under the clipper.
    std::filesystem::path activated;
    const float footer = ImGui::GetFrameHeightWithSpacing();
    if (ImGui::BeginChild("##entries", ImVec2(0, -footer), true)) {
        ImGuiListClipper clipper;
        clipper.Begin(static_cast<int>(entries_.size()));
        while (clipper.Step()) {
            for (int i = clipper.DisplayStart; i < clipper.DisplayEnd; ++i) {
                const entry& e = entries_[static_cast<size_t>(i)];
                const std::string label = e.is_directory ? e.name + "/" : e.name;
                if (ImGui::Selectable(label.c_str(), selected_ == i,
                                      ImGuiSelectableFlags_AllowDoubleClick)) {
                    selected_ = i;
                    copy_to_box((directory_ / e.name).string(), path_box_, sizeof path_box_);
                    if (ImGui::IsMouseDoubleClicked(ImGuiMouseButton_Left)) {
                        activated = directory_ / e.name;
                    }
                }
                if (!e.is_directory) {
                    ImGui::SameLine(ImGui::GetWindowContentRegionMax().x - 90);
                    ImGui::TextDisabled("%s", format_bytes(e.size).c_str());
                }
            }
        }
    }
    ImGui::EndChild();
    if (!activated.empty()) {
        choose(activated);
    }
    if (ImGui::Button("Open")) {
        choose(path_box_);
    }
    ImGui::SameLine();
    // A folder opens as ranks: its summaries and snapshots, searched recursively.
    if (ImGui::Button("Open this folder as ranks")) {
        chosen = directory_.string();
        picked = true;
    }
    ImGui::SameLine();
    if (ImGui::Button("Cancel") || ImGui::IsKeyPressed(ImGui::GetKeyIndex(ImGuiKey_Escape))) {
        ImGui::CloseCurrentPopup();
    }
    if (picked) {
        ImGui::CloseCurrentPopup();
    }
    ImGui::EndPopup();
    return picked;
}

}  // namespace memtrail::viewer

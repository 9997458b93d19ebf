#include "detail/attach_dialog.hpp"

#include <imgui.h>

#include <charconv>
#include <cstdio>
#include <cstring>

namespace memtrail::viewer {

namespace {

constexpr const char* attach_popup = "Attach to a process";
constexpr const char* save_popup = "Save what was received";

}  // namespace

void attach_dialog::open(const std::filesystem::path& folder) {
    folder_ = folder;
    open_requested_ = true;
    list();
}

void attach_dialog::list() {
    processes_.clear();
    error_.clear();
    selected_ = -1;
    try {
        processes_ = attachable_processes(folder_);
    } catch (const std::exception& e) {
        error_ = e.what();
    }
}

bool attach_dialog::draw(pid_t& chosen) {
    if (open_requested_) {
        ImGui::OpenPopup(attach_popup);
        open_requested_ = false;
    }
    ImGui::SetNextWindowSize(ImVec2(760, 380), ImGuiCond_Appearing);
    if (!ImGui::BeginPopupModal(attach_popup)) {
        return false;
    }
    bool picked = false;
    ImGui::TextDisabled("Processes of this user that record with memtrail (endpoints in %s)",
                        folder_.c_str());
    if (!error_.empty()) {
        ImGui::TextColored(ImVec4(1.0f, 0.45f, 0.45f, 1.0f), "%s", error_.c_str());
    } else if (processes_.empty()) {
        ImGui::TextUnformatted(
            "No process to attach to: start one linked with librecorder, under memtrail run\n"
            "or with the Python package (MEMTRAIL_LIVE=off opens no endpoint).");
    }
    const float list_height =
        ImGui::GetContentRegionAvail().y - ImGui::GetFrameHeightWithSpacing() * 2;
    if (ImGui::BeginTable(
            "##processes", 2,
            ImGuiTableFlags_RowBg | ImGuiTableFlags_ScrollY | ImGuiTableFlags_BordersInnerV,
            ImVec2(0, list_height))) {
        ImGui::TableSetupColumn("pid", ImGuiTableColumnFlags_WidthFixed, 80);
        ImGui::TableSetupColumn("command line");
        ImGui::TableSetupScrollFreeze(0, 1);
        ImGui::TableHeadersRow();
        for (size_t i = 0; i < processes_.size(); ++i) {
            const attachable_process& p = processes_[i];
            ImGui::TableNextRow();
            ImGui::TableNextColumn();
            char label[32];
            std::snprintf(label, sizeof label, "%d", static_cast<int>(p.pid));
            if (ImGui::Selectable(
                    label, selected_ == static_cast<int>(i),
                    ImGuiSelectableFlags_SpanAllColumns | ImGuiSelectableFlags_AllowDoubleClick)) {
                selected_ = static_cast<int>(i);
                std::snprintf(pid_box_, sizeof pid_box_, "%d", static_cast<int>(p.pid));
                picked = ImGui::IsMouseDoubleClicked(0);
            }
            ImGui::TableNextColumn();
            ImGui::TextUnformatted(p.command.c_str());
        }
        ImGui::EndTable();
    }
    ImGui::SetNextItemWidth(120);
    const bool entered = ImGui::InputTextWithHint(
        "##pid", "pid", pid_box_, sizeof pid_box_,
        ImGuiInputTextFlags_CharsDecimal | ImGuiInputTextFlags_EnterReturnsTrue);
    ImGui::SameLine();
    picked = ImGui::Button("Attach") || entered || picked;
    ImGui::SameLine();
    if (ImGui::Button("Refresh")) {
        list();
    }
    ImGui::SameLine();
    const bool cancelled = ImGui::Button("Cancel");
    pid_t pid = 0;
    const char* end = pid_box_ + std::strlen(pid_box_);
    const auto [stop, failed] = std::from_chars(pid_box_, end, pid);
    const bool valid = failed == std::errc() && stop == end && pid > 0;
    if (picked && valid) {
        chosen = pid;
    }
    if ((picked && valid) || cancelled) {
        ImGui::CloseCurrentPopup();
    }
    ImGui::EndPopup();
    return picked && valid;
}

void save_dialog::open(const std::string& suggested) {
    std::snprintf(path_box_, sizeof path_box_, "%s", suggested.c_str());
    message_.clear();
    open_requested_ = true;
}

bool save_dialog::draw(std::string& path) {
    if (open_requested_) {
        ImGui::OpenPopup(save_popup);
        open_requested_ = false;
    }
    if (!ImGui::BeginPopupModal(save_popup, nullptr, ImGuiWindowFlags_AlwaysAutoResize)) {
        return false;
    }
    ImGui::TextUnformatted(
        "A memtrail snapshot of the state and history received so far; a name ending in\n"
        ".pickle writes a PyTorch snapshot pickle, .zst a compressed memtrail snapshot.");
    ImGui::SetNextItemWidth(600);
    const bool entered = ImGui::InputText("##save_path", path_box_, sizeof path_box_,
                                          ImGuiInputTextFlags_EnterReturnsTrue);
    if (!message_.empty()) {
        ImGui::TextWrapped("%s", message_.c_str());
    }
    const bool save = (ImGui::Button("Save") || entered) && path_box_[0] != '\0';
    ImGui::SameLine();
    if (ImGui::Button("Close")) {
        ImGui::CloseCurrentPopup();
    }
    ImGui::EndPopup();
    if (save) {
        path = path_box_;
    }
    return save;
}

}  // namespace memtrail::viewer

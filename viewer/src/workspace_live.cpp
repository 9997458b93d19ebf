// The workspace's tabs that follow running processes (File > Attach, memtrail-viewer --attach):
// each new document a live_session makes replaces its tab's view, the user's choices carried
// over (view::carry_over); the tab says above its view how the following goes.

#include <unistd.h>

#include <algorithm>

#include <imgui.h>

#include "detail/attach_dialog.hpp"
#include "memtrail/live/endpoint_folder.hpp"
#include "memtrail/viewer/workspace.hpp"

namespace memtrail::viewer {

void workspace::attach(pid_t pid, live_session::options how) {
    how.frames = frames_;
    attachment following;
    following.session = std::make_unique<live_session>(pid, std::move(how));
    attachments_.push_back(std::move(following));
}

const live_session* workspace::session_of(const view& v) const {
    for (const tab& t : tabs_) {
        if (t.content.get() != &v) {
            continue;
        }
        for (const attachment& a : attachments_) {
            if (a.tab_id == t.id) {
                return a.session.get();
            }
        }
    }
    return nullptr;
}

std::shared_ptr<const snapshot::snapshot> workspace::received_by(const view& v) const {
    for (const tab& t : tabs_) {
        if (t.content.get() != &v) {
            continue;
        }
        for (const attachment& a : attachments_) {
            if (a.tab_id == t.id) {
                return a.recording;
            }
        }
    }
    return nullptr;
}

bool workspace::following() const {
    return std::any_of(attachments_.begin(), attachments_.end(),
                       [](const attachment& a) { return a.session->following(); });
}

bool workspace::attachments_shown() const {
    return std::all_of(attachments_.begin(), attachments_.end(), [](const attachment& a) {
        const uint64_t latest = a.session->latest().number;
        return a.tab_id != 0 ? a.shown == latest : !a.session->following();
    });
}

workspace::attachment* workspace::attachment_of_tab(int tab_id) {
    for (attachment& a : attachments_) {
        if (a.tab_id == tab_id && tab_id != 0) {
            return &a;
        }
    }
    return nullptr;
}

void workspace::follow_attachments() {
    for (auto it = attachments_.begin(); it != attachments_.end();) {
        attachment& a = *it;
        live_session::latest_state latest = a.session->latest();
        if (a.tab_id == 0) {
            if (latest.doc) {
                add(latest.doc).select_moment("end");  // the present
                a.tab_id = tabs_.back().id;
                a.shown = latest.number;
                a.recording = std::move(latest.recording);
            } else if (!a.session->following()) {
                // Attaching failed: said once, like a file that cannot be read.
                errors_.push_back(live_status_line(a.session->status()));
                it = attachments_.erase(it);
                continue;
            }
            ++it;
            continue;
        }
        const auto shown = std::find_if(tabs_.begin(), tabs_.end(),
                                        [&](const tab& t) { return t.id == a.tab_id; });
        if (shown == tabs_.end()) {
            it = attachments_.erase(it);  // its tab was closed: detached by the session's end
            continue;
        }
        if (latest.number != a.shown) {
            auto next = std::make_unique<view>(std::move(latest.doc));
            next->carry_over(*shown->content);
            if (select_ == shown->content.get()) {
                select_ = next.get();
            }
            if (active_ == shown->content.get()) {
                active_ = next.get();
            }
            shown->content = std::move(next);
            a.shown = latest.number;
            a.recording = std::move(latest.recording);
        }
        ++it;
    }
}

void workspace::draw_live_menu_items() {
    if (ImGui::MenuItem("Attach...")) {
        attach_dialog_->open(live::endpoint_folder(::geteuid()));
    }
    attachment* current = nullptr;
    for (const tab& t : tabs_) {
        if (t.content.get() == active_) {
            current = attachment_of_tab(t.id);
        }
    }
    if (ImGui::MenuItem("Save received...", nullptr, false,
                        current != nullptr && current->recording != nullptr)) {
        save_tab_ = current->tab_id;
        save_dialog_->open("process-" + std::to_string(current->session->pid()) + ".memtrail");
    }
    if (ImGui::IsItemHovered(ImGuiHoveredFlags_AllowWhenDisabled)) {
        ImGui::SetTooltip("Writes the state and history the tab of an attached process received.");
    }
    if (ImGui::MenuItem("Detach", nullptr, false,
                        current != nullptr && current->session->following())) {
        current->session->detach();
    }
    if (ImGui::IsItemHovered(ImGuiHoveredFlags_AllowWhenDisabled)) {
        ImGui::SetTooltip("Stops following the process; it runs on as before, the tab stays.");
    }
}

void workspace::draw_live_dialogs() {
    pid_t pid = 0;
    if (attach_dialog_->draw(pid)) {
        attach(pid);
    }
    std::string path;
    if (!save_dialog_->draw(path)) {
        return;
    }
    const attachment* a = attachment_of_tab(save_tab_);
    const auto recording = a != nullptr ? a->recording : nullptr;
    if (recording == nullptr) {
        save_dialog_->set_message("That tab is closed: nothing to save.");
        return;
    }
    try {
        save_received(*recording, path);
        size_t entries = 0;
        for (const snapshot::device_trace& trace : recording->traces) {
            entries += trace.entries.size();
        }
        save_dialog_->set_message("Wrote " + path + " (" + std::to_string(entries) +
                                  " trace entries).");
    } catch (const std::exception& e) {
        save_dialog_->set_message(e.what());
    }
}

void workspace::draw_attaching() {
    for (const attachment& a : attachments_) {
        if (a.tab_id == 0) {
            ImGui::TextUnformatted(live_status_line(a.session->status()).c_str());
        }
    }
}

void workspace::draw_live_status(int tab_id) {
    const attachment* a = attachment_of_tab(tab_id);
    if (a == nullptr) {
        return;
    }
    const live_status status = a->session->status();
    const ImVec4 colour = status.now == live_status::phase::attached
                              ? ImVec4(0.45f, 0.85f, 0.45f, 1.0f)
                              : ImVec4(1.0f, 0.7f, 0.3f, 1.0f);
    ImGui::TextColored(colour, "%s", live_status_line(status).c_str());
    if (active_ != nullptr &&
        active_->moment() < active_->doc().main_device().model.event_count()) {
        ImGui::SameLine();
        ImGui::TextDisabled("| showing an earlier moment; End shows the present");
    }
}

}  // namespace memtrail::viewer

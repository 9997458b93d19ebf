// The workspace: the menu bar, the loads in flight with their first pictures, and the tabs
// (the tabs that follow running processes are workspace_live.cpp's).
//
// Index of this file:
// [SECTION] first pictures of loading files
// [SECTION] opening and loading
// [SECTION] menu
// [SECTION] frame

#include "memtrail/viewer/workspace.hpp"

#include <algorithm>
#include <cstdio>
#include <thread>

#include <imgui.h>

#include "detail/attach_dialog.hpp"
#include "detail/file_dialog.hpp"
#include "detail/format.hpp"
#include "detail/palette.hpp"
#include "memtrail/analysis/timeline.hpp"

namespace memtrail::viewer {

//-------------------------------------------------------------------------------------------------
// [SECTION] first pictures of loading files
//-------------------------------------------------------------------------------------------------

namespace {

// A loading file's first picture: reserved (grey) and allocated (blue) memory over the trace of
// the device it will show first, one bucket per pixel column, with the peaks named.
void draw_load_preview(const load_preview& preview, float height) {
    const analysis::device_model& model = preview.main_model();
    const ImVec2 origin = ImGui::GetCursorScreenPos();
    const float width = std::max(16.0f, ImGui::GetContentRegionAvail().x);
    const size_t columns = static_cast<size_t>(width);
    const size_t positions = model.event_count() + 1;
    const auto reserved =
        analysis::buckets_by_position(model, analysis::series::reserved, 0, positions, columns);
    const auto allocated =
        analysis::buckets_by_position(model, analysis::series::allocated, 0, positions, columns);
    uint64_t top = 1;
    for (const analysis::curve_bucket& b : reserved) {
        top = std::max(top, b.max);
    }
    ImDrawList* draw = ImGui::GetWindowDrawList();
    const ImVec2 end(origin.x + width, origin.y + height);
    draw->AddRectFilled(origin, end, IM_COL32(24, 25, 30, 255));
    auto x_of = [&](size_t position) {
        return origin.x +
               static_cast<float>(static_cast<double>(position) / static_cast<double>(positions)) *
                   width;
    };
    auto y_of = [&](uint64_t bytes) {
        return end.y - static_cast<float>(static_cast<double>(bytes) / static_cast<double>(top)) *
                           (height - 2);
    };
    for (const analysis::curve_bucket& b : reserved) {
        draw->AddRectFilled(ImVec2(x_of(b.first), y_of(b.max)), ImVec2(x_of(b.last), end.y),
                            palette::shade(palette::reserved, 0.45f));
    }
    for (const analysis::curve_bucket& b : allocated) {
        draw->AddRectFilled(ImVec2(x_of(b.first), y_of(b.max)), ImVec2(x_of(b.last), end.y),
                            palette::allocated);
    }
    const std::string caption =
        preview.name + ": " + format_count(model.event_count()) + " events, peak allocated " +
        format_bytes(model.values(
            analysis::series::allocated)[model.peak_position(analysis::series::allocated)]) +
        ", peak reserved " +
        format_bytes(model.values(
            analysis::series::reserved)[model.peak_position(analysis::series::reserved)]) +
        " (categories, stacks and views follow)";
    draw->AddText(ImVec2(origin.x + 6, origin.y + 4), IM_COL32(230, 230, 230, 255),
                  caption.c_str());
    ImGui::Dummy(ImVec2(width, height));
}

}  // namespace

//-------------------------------------------------------------------------------------------------
// [SECTION] opening and loading
//-------------------------------------------------------------------------------------------------

workspace::workspace()
    : dialog_(std::make_unique<file_dialog>()),
      attach_dialog_(std::make_unique<attach_dialog>()),
      save_dialog_(std::make_unique<save_dialog>()) {}

workspace::~workspace() = default;

void workspace::open(const std::string& path) {
    if (opens_as_rank_summaries(path)) {
        open_rank_summaries({path});
        return;
    }
    loads_.push_back(std::make_unique<load_job>(path, frames_, hold_));
}

void workspace::open(const std::vector<std::string>& paths) {
    std::vector<std::string> ranks;
    for (const std::string& path : paths) {
        if (opens_as_rank_summaries(path)) {
            ranks.push_back(path);
        } else {
            open(path);
        }
    }
    if (!ranks.empty()) {
        open_rank_summaries(std::move(ranks));
    }
}

void workspace::open_rank_summaries(std::vector<std::string> paths) {
    // Snapshots without a summary are summarized on every core, as `memtrail ranks` does.
    summary_loads_.push_back(std::make_unique<rank_summaries_job>(
        std::move(paths), std::max(1u, std::thread::hardware_concurrency())));
}

bool workspace::show_rank_summaries() {
    select_summaries_ = summaries_ != nullptr;
    return select_summaries_;
}

bool workspace::previews_ready() const {
    return std::all_of(loads_.begin(), loads_.end(), [](const std::unique_ptr<load_job>& job) {
        return job->done() || job->preview() != nullptr;
    });
}

void workspace::release_loads() {
    hold_ = load_hold::none;
    for (const auto& job : loads_) {
        job->release();
    }
}

void workspace::reopen_with(analysis::frame_visibility frames) {
    frames_ = frames;
    // Stacks are interned with the visibility (grouping follows it), so each file is read again;
    // documents made in memory (no path) keep theirs.
    for (auto it = tabs_.begin(); it != tabs_.end();) {
        if (it->content->doc().path.empty()) {
            ++it;
            continue;
        }
        open(it->content->doc().path);
        it = tabs_.erase(it);
    }
    select_ = nullptr;
    active_ = nullptr;
}

view& workspace::add(std::shared_ptr<const document> doc) {
    tabs_.push_back({std::make_unique<view>(std::move(doc)), next_id_++});
    select_ = tabs_.back().content.get();
    return *tabs_.back().content;
}

bool workspace::busy() const {
    return loading() ||
           std::any_of(tabs_.begin(), tabs_.end(), [](const tab& t) { return t.content->busy(); });
}

std::vector<view*> workspace::views() {
    std::vector<view*> out;
    for (const tab& t : tabs_) {
        out.push_back(t.content.get());
    }
    return out;
}

void workspace::select(const view& v) {
    select_ = &v;
}

void workspace::activate(const std::shared_ptr<const document>& doc) {
    // The chosen rank opens on the Ranks tab too, so the table stays in sight.
    for (const tab& t : tabs_) {
        if (t.content->shared_doc() == doc) {
            t.content->show(view_kind::ranks);
            select_ = t.content.get();
        }
    }
}

void workspace::collect_finished_loads() {
    // Tabs appear in the order the files were opened, whichever load finishes first.
    while (!loads_.empty() && loads_.front()->done()) {
        const load_job& job = *loads_.front();
        if (auto doc = job.result()) {
            add(std::move(doc));
        } else {
            // The analysis's messages start with the path already; others get it in front.
            const std::string& error = job.error();
            errors_.push_back(error.rfind(job.path(), 0) == 0 ? error : job.path() + ": " + error);
        }
        loads_.erase(loads_.begin());
    }
}

void workspace::collect_finished_summaries() {
    while (!summary_loads_.empty() && summary_loads_.front()->done()) {
        const rank_summaries_job& job = *summary_loads_.front();
        if (const auto set = job.result()) {
            errors_.insert(errors_.end(), set->errors.begin(), set->errors.end());
            if (!set->summaries.empty()) {
                // Every set opened joins the one ranks tab, ranked again together.
                summaries_ = std::make_unique<rank_summaries_view>(
                    summaries_
                        ? std::make_shared<const rank_summary_set>(merged(summaries_->set(), *set))
                        : set);
                select_summaries_ = true;
            }
        } else {
            errors_.push_back(job.error());
        }
        summary_loads_.erase(summary_loads_.begin());
    }
}

void workspace::draw_rank_summaries() {
    summaries_->draw();
    const std::string wanted = summaries_->take_requested_snapshot();
    if (wanted.empty()) {
        return;
    }
    // The rank's snapshot becomes the active tab: the one open already, else opened now (a
    // loaded file's tab is selected when it arrives).
    for (const tab& t : tabs_) {
        if (t.content->doc().path == wanted) {
            select_ = t.content.get();
            return;
        }
    }
    if (std::none_of(loads_.begin(), loads_.end(),
                     [&](const auto& load) { return load->path() == wanted; })) {
        open(wanted);
    }
}

//-------------------------------------------------------------------------------------------------
// [SECTION] menu
//-------------------------------------------------------------------------------------------------

void workspace::draw_menu() {
    const ImGuiIO& io = ImGui::GetIO();
    // GLFW key codes are ASCII for letters (see view::handle_keys).
    if (io.KeyCtrl && ImGui::IsKeyPressed('O')) {
        dialog_->open();
    }
    if (io.KeyCtrl && ImGui::IsKeyPressed('Q')) {
        quit_requested_ = true;
    }
    if (!ImGui::BeginMenuBar()) {
        return;
    }
    if (ImGui::BeginMenu("File")) {
        if (ImGui::MenuItem("Open...", "Ctrl+O")) {
            dialog_->open();
        }
        draw_live_menu_items();
        if (ImGui::MenuItem("Quit", "Ctrl+Q")) {
            quit_requested_ = true;
        }
        ImGui::EndMenu();
    }
    if (ImGui::BeginMenu("View")) {
        bool all_frames = frames_ == analysis::frame_visibility::all_frames;
        if (ImGui::MenuItem("Every frame", nullptr, &all_frames)) {
            reopen_with(all_frames ? analysis::frame_visibility::all_frames
                                   : analysis::frame_visibility::user_frames);
        }
        if (ImGui::IsItemHovered()) {
            ImGui::SetTooltip(
                "Show every frame of every stack. By default stacks show the innermost frame\n"
                "of interest and your own frame, PyTorch's plumbing between them folded into\n"
                "one line (nn.Module calls, _apply, optimizer wrappers, autograd, the\n"
                "dispatcher, the interpreter). Reopens the files.");
        }
        ImGui::EndMenu();
    }
    if (ImGui::BeginMenu("Help")) {
        ImGui::TextUnformatted(
            "Open: File > Open, the path box, drag and drop, or the command line.\n"
            "Attach: File > Attach follows a running process (memtrail-viewer --attach PID).\n"
            "Timeline: wheel zooms, drag pans, shift-drag or right-drag selects a range,\n"
            "click selects a moment and an allocation.\n"
            "Left/Right: step one event (Shift: 100). Home/End: first/last event.\n"
            "Up/Down in Events: previous/next listed event.\n"
            "Ctrl+F: search stacks. Escape: clear the allocation, range and search.\n"
            "Ranks: the open snapshots side by side; click a rank to show it in the other tabs.\n"
            "Rank summaries (.summary.json) and folders open as a heatmap of every rank,\n"
            "outliers first; click a rank to open its snapshot.");
        ImGui::EndMenu();
    }
    ImGui::SetNextItemWidth(std::min(480.0f, ImGui::GetContentRegionAvail().x));
    if (ImGui::InputTextWithHint("##path", "open a path: type it and press Enter", path_box_,
                                 sizeof path_box_, ImGuiInputTextFlags_EnterReturnsTrue) &&
        path_box_[0] != '\0') {
        open(path_box_);
        path_box_[0] = '\0';
    }
    ImGui::EndMenuBar();
}

//-------------------------------------------------------------------------------------------------
// [SECTION] frame
//-------------------------------------------------------------------------------------------------

void workspace::draw() {
    collect_finished_loads();
    collect_finished_summaries();
    follow_attachments();
    const ImGuiIO& io = ImGui::GetIO();
    ImGui::SetNextWindowPos(ImVec2(0, 0));
    ImGui::SetNextWindowSize(io.DisplaySize);
    const ImGuiWindowFlags flags = ImGuiWindowFlags_NoDecoration | ImGuiWindowFlags_NoMove |
                                   ImGuiWindowFlags_MenuBar | ImGuiWindowFlags_NoSavedSettings |
                                   ImGuiWindowFlags_NoBringToFrontOnFocus;
    ImGui::Begin("memtrail", nullptr, flags);
    draw_menu();
    std::string chosen;
    if (dialog_->draw(chosen)) {
        open(chosen);
    }
    draw_live_dialogs();

    for (size_t i = 0; i < errors_.size();) {
        ImGui::PushID(static_cast<int>(i));
        ImGui::TextColored(ImVec4(1.0f, 0.45f, 0.45f, 1.0f), "%s", errors_[i].c_str());
        ImGui::SameLine();
        const bool dismissed = ImGui::SmallButton("dismiss");
        ImGui::PopID();
        if (dismissed) {
            errors_.erase(errors_.begin() + static_cast<ptrdiff_t>(i));
        } else {
            ++i;
        }
    }
    for (const auto& load : summary_loads_) {
        ImGui::Text("reading rank summaries of %s: %zu of %zu files (snapshots are summarized)",
                    load->title().c_str(), load->files_done(), load->files_total());
        ImGui::SameLine();
        ImGui::ProgressBar(load->files_total() == 0 ? 0.0f
                                                    : static_cast<float>(load->files_done()) /
                                                          static_cast<float>(load->files_total()),
                           ImVec2(300, 0));
    }
    for (const auto& load : loads_) {
        ImGui::Text("loading %s: %s", load->path().c_str(), load->stage());
        ImGui::SameLine();
        ImGui::ProgressBar(load->fraction(), ImVec2(300, 0));
        // Before the first tab, the first picture fills the window; beside tabs, a strip.
        if (const auto preview = load->preview()) {
            const float room = ImGui::GetContentRegionAvail().y;
            draw_load_preview(*preview, tabs_.empty() ? std::max(120.0f, room * 0.6f) : 60.0f);
        }
    }

    draw_attaching();

    if (tabs_.empty() && !summaries_) {
        if (loads_.empty() && summary_loads_.empty() && attachments_.empty()) {
            const char* hint =
                "Drop a memtrail snapshot, a PyTorch snapshot pickle, rank summaries or a folder "
                "of them here, or use File > Open.";
            const ImVec2 size = ImGui::CalcTextSize(hint);
            ImGui::SetCursorPos(ImVec2((io.DisplaySize.x - size.x) / 2, io.DisplaySize.y / 2));
            ImGui::TextDisabled("%s", hint);
        }
        ImGui::End();
        return;
    }

    std::vector<std::shared_ptr<const document>> documents;
    for (const tab& t : tabs_) {
        documents.push_back(t.content->shared_doc());
    }
    if (ImGui::BeginTabBar("##snapshots",
                           ImGuiTabBarFlags_Reorderable | ImGuiTabBarFlags_FittingPolicyScroll)) {
        if (summaries_) {
            char title[64];
            std::snprintf(title, sizeof title, "Ranks (%zu)###rank_summaries",
                          summaries_->set().summaries.size());
            const ImGuiTabItemFlags tab_flags =
                select_summaries_ ? ImGuiTabItemFlags_SetSelected : ImGuiTabItemFlags_None;
            if (ImGui::BeginTabItem(title, nullptr, tab_flags)) {
                select_summaries_ = false;
                active_ = nullptr;
                draw_rank_summaries();
                ImGui::EndTabItem();
            }
        }
        for (auto it = tabs_.begin(); it != tabs_.end();) {
            view& v = *it->content;
            char title[300];
            std::snprintf(title, sizeof title, "%s###snapshot%d", v.doc().name.c_str(), it->id);
            bool keep = true;
            const ImGuiTabItemFlags tab_flags =
                select_ == &v ? ImGuiTabItemFlags_SetSelected : ImGuiTabItemFlags_None;
            if (ImGui::BeginTabItem(title, &keep, tab_flags)) {
                if (select_ == &v) {
                    select_ = nullptr;
                }
                active_ = &v;
                draw_live_status(it->id);
                v.set_candidates(documents);
                v.draw();
                ImGui::EndTabItem();
                if (const auto wanted = v.take_requested_document()) {
                    activate(wanted);
                }
            }
            if (!keep) {
                if (select_ == &v) {
                    select_ = nullptr;
                }
                if (active_ == &v) {
                    active_ = nullptr;
                }
                it = tabs_.erase(it);
            } else {
                ++it;
            }
        }
        ImGui::EndTabBar();
    }
    ImGui::End();
}

}  // namespace memtrail::viewer

#pragma once
// What the viewer's headless tests share: the test snapshots, loaded once, and frames of a view
// drawn until its background work is done, with the text they show.

#include <chrono>
#include <memory>
#include <string>
#include <thread>

#include <imgui_internal.h>

#include "memtrail/viewer/document.hpp"
#include "memtrail/viewer/headless_frame.hpp"
#include "memtrail/viewer/view.hpp"

namespace memtrail::viewer {

inline constexpr int width = 1280;
inline constexpr int height = 800;

inline std::shared_ptr<const document> load(const std::string& path) {
    load_progress progress;
    return load_document(path, progress);
}

inline const std::shared_ptr<const document>& torch_document() {
    static const auto doc = load(MEMTRAIL_TEST_TORCH_PICKLE);
    return doc;
}

inline const std::shared_ptr<const document>& memtrail_document() {
    static const auto doc = load(MEMTRAIL_TEST_SNAPSHOT);
    return doc;
}

// Draws `v` as the one window of the frame.
inline void draw_frame(headless_frame& frame, view& v) {
    frame.begin();
    ImGui::SetNextWindowPos(ImVec2(0, 0));
    ImGui::SetNextWindowSize(ImGui::GetIO().DisplaySize);
    ImGui::Begin("view", nullptr, ImGuiWindowFlags_NoDecoration);
    v.draw();
    ImGui::End();
}

// Frames until the view's background work is done and drawn (a result that arrives is taken by
// the next frame, hence two quiet frames); returns the last frame's data.
inline const ImDrawData& settle(headless_frame& frame, view& v) {
    int quiet = 0;
    for (int i = 0;; ++i) {
        draw_frame(frame, v);
        quiet = v.busy() ? 0 : quiet + 1;
        const ImDrawData& data = frame.end();
        if (i >= 3 && quiet >= 2) {
            return data;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
}

// The text a settled frame of `v` shows (ImGui's log of the rendered text items).
inline std::string settled_text(headless_frame& frame, view& v) {
    settle(frame, v);
    draw_frame(frame, v);
    frame.end();
    frame.begin();
    ImGui::SetNextWindowPos(ImVec2(0, 0));
    ImGui::SetNextWindowSize(ImGui::GetIO().DisplaySize);
    ImGui::Begin("view", nullptr, ImGuiWindowFlags_NoDecoration);
    ImGui::LogToBuffer();
    v.draw();
    std::string text = ImGui::GetCurrentContext()->LogBuffer.c_str();
    ImGui::LogFinish();
    ImGui::End();
    frame.end();
    return text;
}

}  // namespace memtrail::viewer

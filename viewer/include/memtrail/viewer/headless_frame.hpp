#pragma once
// An ImGui context with no window and no GPU: NewFrame/Render build draw lists on the CPU only.
// The benchmarks and tests use it to measure and check what a frame of a view builds.

#include <imgui.h>

namespace memtrail::viewer {

class headless_frame {
  public:
    // Creates an ImGui context of `width` x `height` pixels and makes it current.
    headless_frame(int width, int height);
    ~headless_frame();
    headless_frame(const headless_frame&) = delete;
    headless_frame& operator=(const headless_frame&) = delete;

    void begin();
    // Ends the frame and returns what a renderer would draw.
    const ImDrawData& end();

  private:
    ImGuiContext* context_ = nullptr;
};

}  // namespace memtrail::viewer

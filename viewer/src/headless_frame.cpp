#include "memtrail/viewer/headless_frame.hpp"

namespace memtrail::viewer {

headless_frame::headless_frame(int width, int height) : context_(ImGui::CreateContext()) {
    ImGui::SetCurrentContext(context_);
    ImGuiIO& io = ImGui::GetIO();
    io.IniFilename = nullptr;
    io.DisplaySize = ImVec2(static_cast<float>(width), static_cast<float>(height));
    io.DeltaTime = 1.0f / 60.0f;
    // As the OpenGL 3 renderer does: draw lists past 64K vertices are split, not refused.
    io.BackendFlags |= ImGuiBackendFlags_RendererHasVtxOffset;
    // The font atlas must be built before the first frame; a renderer would upload it here.
    unsigned char* pixels = nullptr;
    int atlas_width = 0;
    int atlas_height = 0;
    io.Fonts->GetTexDataAsRGBA32(&pixels, &atlas_width, &atlas_height);
    ImGui::StyleColorsDark();
}

headless_frame::~headless_frame() {
    ImGui::DestroyContext(context_);
}

void headless_frame::begin() {
    ImGui::SetCurrentContext(context_);
    ImGui::NewFrame();
}

const ImDrawData& headless_frame::end() {
    ImGui::Render();
    return *ImGui::GetDrawData();
}

}  // namespace memtrail::viewer

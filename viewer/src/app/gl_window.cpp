#include "detail/gl_window.hpp"

#include <GLFW/glfw3.h>
#include <backends/imgui_impl_glfw.h>
#include <backends/imgui_impl_opengl3.h>
#include <imgui.h>

#include <cfloat>
#include <cstdio>
#include <cstring>
#include <stdexcept>

namespace memtrail::viewer::app {

namespace {

void report_glfw_error(int code, const char* description) {
    std::fprintf(stderr, "memtrail-viewer: GLFW error %d: %s\n", code, description);
}

}  // namespace

gl_window::gl_window(const char* title, int width, int height) {
    glfwSetErrorCallback(report_glfw_error);
    if (!glfwInit()) {
        throw std::runtime_error("cannot start GLFW (no display? run under xvfb-run -a)");
    }
    glfwWindowHint(GLFW_CONTEXT_VERSION_MAJOR, 3);
    glfwWindowHint(GLFW_CONTEXT_VERSION_MINOR, 0);
    window_ = glfwCreateWindow(width, height, title, nullptr, nullptr);
    if (window_ == nullptr) {
        glfwTerminate();
        throw std::runtime_error("cannot open an OpenGL 3.0 window");
    }
    glfwMakeContextCurrent(window_);
    glfwSwapInterval(1);
    glfwSetWindowUserPointer(window_, this);
    glfwSetDropCallback(window_, on_drop);

    IMGUI_CHECKVERSION();
    ImGui::CreateContext();
    ImGui::GetIO().IniFilename = nullptr;  // layout is rebuilt on each start; no imgui.ini
    ImGui::StyleColorsDark();
    ImGui_ImplGlfw_InitForOpenGL(window_, true);
    ImGui_ImplOpenGL3_Init("#version 130");
}

gl_window::~gl_window() {
    ImGui_ImplOpenGL3_Shutdown();
    ImGui_ImplGlfw_Shutdown();
    ImGui::DestroyContext();
    glfwDestroyWindow(window_);
    glfwTerminate();
}

bool gl_window::should_close() const {
    return glfwWindowShouldClose(window_) != 0;
}

void gl_window::begin_frame(double wait_seconds) {
    if (wait_seconds > 0) {
        glfwWaitEventsTimeout(wait_seconds);
    } else {
        glfwPollEvents();
    }
    ImGui_ImplOpenGL3_NewFrame();
    ImGui_ImplGlfw_NewFrame();
    if (ignore_mouse_) {
        ImGui::GetIO().MousePos = ImVec2(-FLT_MAX, -FLT_MAX);
    }
    ImGui::NewFrame();
}

void gl_window::render() {
    ImGui::Render();
    int width = 0;
    int height = 0;
    glfwGetFramebufferSize(window_, &width, &height);
    glViewport(0, 0, width, height);
    glClearColor(0.08f, 0.08f, 0.09f, 1.0f);
    glClear(GL_COLOR_BUFFER_BIT);
    ImGui_ImplOpenGL3_RenderDrawData(ImGui::GetDrawData());
}

void gl_window::present() {
    glfwSwapBuffers(window_);
}

std::vector<uint8_t> gl_window::read_back_buffer(int& width, int& height) const {
    glfwGetFramebufferSize(window_, &width, &height);
    const size_t row = static_cast<size_t>(width) * 4;
    std::vector<uint8_t> bottom_up(row * static_cast<size_t>(height));
    glReadBuffer(GL_BACK);
    glPixelStorei(GL_PACK_ALIGNMENT, 1);
    glReadPixels(0, 0, width, height, GL_RGBA, GL_UNSIGNED_BYTE, bottom_up.data());
    // The window is opaque whatever alpha the framebuffer kept.
    for (size_t i = 3; i < bottom_up.size(); i += 4) {
        bottom_up[i] = 255;
    }
    // OpenGL's first row is the bottom one; image files start at the top.
    std::vector<uint8_t> top_down(bottom_up.size());
    for (int y = 0; y < height; ++y) {
        std::memcpy(top_down.data() + static_cast<size_t>(y) * row,
                    bottom_up.data() + static_cast<size_t>(height - 1 - y) * row, row);
    }
    return top_down;
}

std::vector<std::string> gl_window::take_dropped_paths() {
    std::vector<std::string> paths;
    paths.swap(dropped_);
    return paths;
}

void gl_window::on_drop(GLFWwindow* window, int count, const char** paths) {
    auto* self = static_cast<gl_window*>(glfwGetWindowUserPointer(window));
    for (int i = 0; i < count; ++i) {
        self->dropped_.emplace_back(paths[i]);
    }
}

}  // namespace memtrail::viewer::app

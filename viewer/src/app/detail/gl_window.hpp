#pragma once
// The one window of memtrail-viewer: GLFW + OpenGL 3 + Dear ImGui's GLFW and OpenGL3 backends.
// Everything GL lives here and in screenshot.cpp; the views only build ImGui draw lists.

#include <cstdint>
#include <string>
#include <vector>

struct GLFWwindow;

namespace memtrail::viewer::app {

class gl_window {
  public:
    // Opens the window and creates the ImGui context; throws std::runtime_error when GLFW or
    // OpenGL cannot start (no display: run under xvfb-run).
    gl_window(const char* title, int width, int height);
    ~gl_window();
    gl_window(const gl_window&) = delete;
    gl_window& operator=(const gl_window&) = delete;

    bool should_close() const;
    // Waits up to `wait_seconds` for input (0: just polls), then starts an ImGui frame.
    void begin_frame(double wait_seconds);
    // Screenshots are taken with the mouse away: no hover highlight or tooltip in them.
    void ignore_mouse() { ignore_mouse_ = true; }
    // Renders the ImGui frame into the back buffer; present() shows it.
    void render();
    void present();

    // The back buffer as RGBA rows, top row first.
    std::vector<uint8_t> read_back_buffer(int& width, int& height) const;

    // Paths dropped on the window since the last call.
    std::vector<std::string> take_dropped_paths();

  private:
    static void on_drop(GLFWwindow* window, int count, const char** paths);

    GLFWwindow* window_ = nullptr;
    std::vector<std::string> dropped_;
    bool ignore_mouse_ = false;
};

}  // namespace memtrail::viewer::app

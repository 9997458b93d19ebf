// memtrail-viewer: the interactive viewer, and with --screenshot a renderer of one frame of one
// view to a PNG file (under xvfb-run where there is no display).

#include <cstdio>
#include <exception>

#include "detail/attach_screenshots.hpp"
#include "detail/command_line.hpp"
#include "detail/gl_window.hpp"
#include "detail/png_file.hpp"
#include "memtrail/viewer/workspace.hpp"

namespace {

using memtrail::viewer::app::gl_window;
using memtrail::viewer::app::options;

int run_interactive(const options& opts) {
    gl_window window("memtrail-viewer", opts.width, opts.height);
    memtrail::viewer::workspace ws;
    ws.set_frames(opts.all_frames ? memtrail::analysis::frame_visibility::all_frames
                                  : memtrail::analysis::frame_visibility::user_frames);
    ws.open(opts.files);
    if (opts.attach != 0) {
        ws.attach(opts.attach);
    }
    while (!window.should_close() && !ws.quit_requested()) {
        for (const std::string& path : window.take_dropped_paths()) {
            ws.open(path);
        }
        // Sleep until input comes; while something loads or computes, look again soon.
        // A followed process's next state is looked for five times a second.
        window.begin_frame(ws.busy() ? 0.05 : ws.following() ? 0.2 : 0.5);
        ws.draw();
        window.render();
        window.present();
    }
    return 0;
}

// Draws frames until `done`, then two more so the layout settles, and writes the last to the PNG.
template <class Done>
void write_screenshot_when(gl_window& window, memtrail::viewer::workspace& ws,
                           const std::string& path, Done&& done) {
    int settled = 0;
    for (int frame = 0;; ++frame) {
        window.begin_frame(done() ? 0.0 : 0.01);
        ws.draw();
        window.render();
        settled = done() ? settled + 1 : 0;
        if (frame >= 3 && settled >= 2) {
            int width = 0;
            int height = 0;
            const std::vector<uint8_t> pixels = window.read_back_buffer(width, height);
            memtrail::viewer::app::write_png(path, pixels, width, height);
            return;
        }
        window.present();
    }
}

// --view loading: the window while the files load, once each has its first picture (the loads
// are held there until the picture is taken).
int run_loading_screenshot(const options& opts) {
    gl_window window("memtrail-viewer", opts.width, opts.height);
    window.ignore_mouse();
    memtrail::viewer::workspace ws;
    ws.set_frames(opts.all_frames ? memtrail::analysis::frame_visibility::all_frames
                                  : memtrail::analysis::frame_visibility::user_frames);
    ws.hold_loads_at_preview();
    ws.open(opts.files);
    write_screenshot_when(window, ws, opts.screenshot, [&] { return ws.previews_ready(); });
    ws.release_loads();
    while (ws.loading()) {
        window.begin_frame(0.05);
        ws.draw();
        window.render();
        window.present();
    }
    for (const std::string& error : ws.errors()) {
        std::fprintf(stderr, "memtrail-viewer: %s\n", error.c_str());
    }
    return ws.errors().empty() ? 0 : 1;
}

int run_screenshot(const options& opts) {
    if (opts.view == "loading") {
        return run_loading_screenshot(opts);
    }
    memtrail::viewer::view_kind kind{};
    if (!memtrail::viewer::parse_view_kind(opts.view, kind)) {
        std::fprintf(stderr, "memtrail-viewer: unknown view '%s'\n%s", opts.view.c_str(),
                     memtrail::viewer::app::usage());
        return 2;
    }
    gl_window window("memtrail-viewer", opts.width, opts.height);
    window.ignore_mouse();
    memtrail::viewer::workspace ws;
    ws.set_frames(opts.all_frames ? memtrail::analysis::frame_visibility::all_frames
                                  : memtrail::analysis::frame_visibility::user_frames);
    ws.open(opts.files);
    // Frames go on while the files load; then the first file's view is set up as asked.
    while (ws.loading()) {
        window.begin_frame(0.05);
        ws.draw();
        window.render();
        window.present();
    }
    if (!ws.errors().empty()) {
        for (const std::string& error : ws.errors()) {
            std::fprintf(stderr, "memtrail-viewer: %s\n", error.c_str());
        }
        return 1;
    }
    // Rank summaries and folders: the heatmap of every rank.
    if (kind == memtrail::viewer::view_kind::ranks && ws.show_rank_summaries()) {
        write_screenshot_when(window, ws, opts.screenshot, [&] { return !ws.busy(); });
        return 0;
    }
    const std::vector<memtrail::viewer::view*> views = ws.views();
    if (views.empty()) {
        std::fprintf(stderr,
                     "memtrail-viewer: --view %s needs a snapshot; rank summaries and folders "
                     "show only in --view ranks\n",
                     opts.view.c_str());
        return 2;
    }
    memtrail::viewer::view& v = *views.front();
    ws.select(v);
    v.show(kind);
    if (opts.device >= 0 && !v.select_device(opts.device)) {
        std::fprintf(stderr, "memtrail-viewer: %s has no device %d\n", opts.files[0].c_str(),
                     opts.device);
        return 2;
    }
    if (!v.select_moment(opts.at)) {
        std::fprintf(stderr, "memtrail-viewer: --at wants EVENT, peak or end, not '%s'\n",
                     opts.at.c_str());
        return 2;
    }
    if (!opts.stack_by.empty() && !v.stack_timeline_by(opts.stack_by)) {
        std::fprintf(stderr,
                     "memtrail-viewer: --stack-by wants category, stack, allocation or segment, "
                     "not '%s'\n",
                     opts.stack_by.c_str());
        return 2;
    }
    v.fit_segment_rows(opts.fit_rows);
    if (opts.range) {
        v.set_range(*opts.range);
    }
    if (views.size() > 1) {
        v.set_comparison(views[1]->shared_doc());
    } else if (opts.range) {
        v.compare_range_ends(true);
    }
    if (kind == memtrail::viewer::view_kind::allocation) {
        v.select_largest_live_allocation();  // the details of something, not the picking list
    }
    // A few frames settle the layout (tabs, tables and auto-sized windows take one each), and
    // the views' background results must have arrived and been drawn once.
    write_screenshot_when(window, ws, opts.screenshot, [&] { return !ws.busy(); });
    return 0;
}

}  // namespace

int main(int argc, char** argv) {
    try {
        const options opts = memtrail::viewer::app::parse_command_line(argc, argv);
        if (opts.help) {
            std::fputs(memtrail::viewer::app::usage(), stdout);
            return 0;
        }
        if (opts.version) {
            std::puts("memtrail-viewer " MEMTRAIL_VERSION);
            return 0;
        }
        if (opts.screenshot.empty()) {
            return run_interactive(opts);
        }
        return opts.attach != 0 ? memtrail::viewer::app::run_attach_screenshots(opts)
                                : run_screenshot(opts);
    } catch (const std::invalid_argument& e) {
        std::fprintf(stderr, "memtrail-viewer: %s\n%s", e.what(), memtrail::viewer::app::usage());
        return 2;
    } catch (const std::exception& e) {
        std::fprintf(stderr, "memtrail-viewer: %s\n", e.what());
        return 1;
    }
}

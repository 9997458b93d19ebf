#include "detail/attach_screenshots.hpp"

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>

#include "detail/gl_window.hpp"
#include "detail/png_file.hpp"
#include "memtrail/viewer/workspace.hpp"

namespace memtrail::viewer::app {

namespace {

using clock_type = std::chrono::steady_clock;

// OUT.png for the one picture, OUT-N.png for the Nth of a series.
std::filesystem::path numbered(const std::filesystem::path& out, int number) {
    if (number == 0) {
        return out;
    }
    std::filesystem::path named = out;
    named.replace_filename(out.stem().string() + "-" + std::to_string(number) +
                           out.extension().string());
    return named;
}

// What the picture shows, one "key value" a line: the status line, then the numbers a test
// compares (the events received, the trace shown, the memory at the moment shown).
void write_description(const std::filesystem::path& png, const view& v,
                       const live_session& session) {
    const live_status status = session.status();
    const analysis::device_model& model = v.doc().main_device().model;
    const size_t moment = std::min(v.moment(), model.event_count());
    std::filesystem::path text = png;
    text.replace_extension(".txt");
    std::ofstream out(text);
    out << "status " << live_status_line(status) << "\n"
        << "following " << (session.following() ? "yes" : "no") << "\n"
        << "events_received " << status.events_received << "\n"
        << "events_missed " << status.events_missed << "\n"
        << "trace_entries " << model.event_count() << "\n"
        << "moment " << moment << "\n"
        << "allocated_bytes " << model.values(analysis::series::allocated)[moment] << "\n"
        << "reserved_bytes " << model.values(analysis::series::reserved)[moment] << "\n";
    if (!out) {
        throw std::runtime_error(text.string() + ": cannot be written");
    }
}

}  // namespace

int run_attach_screenshots(const options& opts) {
    view_kind kind{};
    if (!parse_view_kind(opts.view, kind)) {
        std::fprintf(stderr, "memtrail-viewer: unknown view '%s'\n%s", opts.view.c_str(), usage());
        return 2;
    }
    gl_window window("memtrail-viewer", opts.width, opts.height);
    window.ignore_mouse();
    workspace ws;
    live_session::options how;
    if (opts.every > 0) {
        how.refresh = std::chrono::milliseconds(
            std::max<int64_t>(50, std::min<int64_t>(500, static_cast<int64_t>(opts.every * 500))));
    }
    ws.attach(opts.attach, how);
    const view* set_up = nullptr;
    int settled = 0;
    int shots = 0;
    auto next_shot = clock_type::now();
    for (;;) {
        window.begin_frame(0.02);
        ws.draw();
        window.render();
        const std::vector<view*> views = ws.views();
        if (views.empty()) {
            if (!ws.following()) {
                for (const std::string& error : ws.errors()) {
                    std::fprintf(stderr, "memtrail-viewer: %s\n", error.c_str());
                }
                return 1;
            }
            window.present();
            continue;
        }
        view& v = *views.front();
        if (set_up != &v) {  // the first view, or one remade from a newer document
            if (set_up == nullptr) {
                v.show(kind);
                ws.select(v);
            }
            set_up = &v;
            settled = 0;
        }
        const live_session& session = *ws.session_of(v);
        const bool ended = !session.following();
        settled = ws.attachments_shown() && !ws.busy() ? settled + 1 : 0;
        const bool due = opts.every == 0 || ended || clock_type::now() >= next_shot;
        if (settled >= 3 && due) {
            const std::filesystem::path png =
                numbered(opts.screenshot, opts.every > 0 ? ++shots : 0);
            int width = 0;
            int height = 0;
            const std::vector<uint8_t> pixels = window.read_back_buffer(width, height);
            write_png(png.string(), pixels, width, height);
            write_description(png, v, session);
            next_shot = clock_type::now() + std::chrono::duration_cast<clock_type::duration>(
                                                std::chrono::duration<double>(opts.every));
            if (opts.every == 0 || ended) {
                break;
            }
        }
        window.present();
    }
    if (!opts.save.empty()) {  // what the last picture shows
        save_received(*ws.received_by(*ws.views().front()), opts.save);
    }
    return 0;
}

}  // namespace memtrail::viewer::app

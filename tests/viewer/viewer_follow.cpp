// viewer_follow PID: what `memtrail-viewer --attach PID` does to a process and on its own side,
// without a window (the model library only, so it builds where the viewer is switched off): a
// live_session follows PID and each new document is picked up five times a second, as the
// viewer's loop does. tests/gpu/viewer_attach_cost.py measures a job with it attached.
//
// Prints one JSON line per document picked up, and a last one when the process exits or on
// SIGINT/SIGTERM (detached):
//   {"document": N, "trace_entries": E, "events_received": R, "events_missed": M,
//    "fell_behind": B, "status": "..."}

#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>

#include "memtrail/viewer/live_session.hpp"

namespace {

volatile std::sig_atomic_t stop_requested = 0;

void request_stop(int) {
    stop_requested = 1;
}

std::string json_text(const std::string& text) {
    std::string out = "\"";
    for (const char c : text) {
        if (c == '"' || c == '\\') {
            out += '\\';
        }
        out += c;
    }
    return out + "\"";
}

void print_line(const memtrail::viewer::live_session& session, uint64_t number,
                size_t trace_entries) {
    const memtrail::viewer::live_status s = session.status();
    std::printf(
        "{\"document\": %llu, \"trace_entries\": %zu, \"events_received\": %llu, "
        "\"events_missed\": %llu, \"fell_behind\": %llu, \"status\": %s}\n",
        static_cast<unsigned long long>(number), trace_entries,
        static_cast<unsigned long long>(s.events_received),
        static_cast<unsigned long long>(s.events_missed),
        static_cast<unsigned long long>(s.restarts),
        json_text(memtrail::viewer::live_status_line(s)).c_str());
    std::fflush(stdout);
}

}  // namespace

int main(int argc, char** argv) {
    char* end = nullptr;
    const long pid = argc == 2 ? std::strtol(argv[1], &end, 10) : 0;
    if (argc != 2 || *end != '\0' || pid <= 0) {
        std::fprintf(stderr, "usage: viewer_follow PID\n");
        return 2;
    }
    std::signal(SIGINT, request_stop);
    std::signal(SIGTERM, request_stop);
    memtrail::viewer::live_session session(static_cast<pid_t>(pid), {});
    uint64_t shown = 0;
    size_t entries = 0;
    for (;;) {
        const bool following = session.following();  // read first: a last document may follow
        const auto latest = session.latest();
        if (latest.number != shown) {
            shown = latest.number;
            entries = latest.doc->main_device().model.event_count();
            print_line(session, shown, entries);
        }
        if (!following) {
            break;
        }
        if (stop_requested) {
            session.detach();
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(200));
    }
    print_line(session, shown, entries);
    const memtrail::viewer::live_status status = session.status();
    return status.now == memtrail::viewer::live_status::phase::failed ? 1 : 0;
}

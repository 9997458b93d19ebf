#pragma once
// A viewer attached to a running process (memtrail-viewer --attach PID, File > Attach): two
// connections to its endpoint (docs/live.md), one receiving the event stream on a thread of its
// own, one asking for the allocator's state every refresh on another. The events thread only
// reads and decodes frames into a queue, so it never waits for a document being made; the
// session thread appends them to its live_trace, and each refresh whose events have all arrived
// becomes a document (live_trace::cut, then make_document): the UI thread only picks the latest
// one up. Detaching closes both connections and leaves the process as it was.

#include <sys/types.h>

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <filesystem>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include "memtrail/live/protocol.hpp"
#include "memtrail/viewer/document.hpp"
#include "memtrail/viewer/live_trace.hpp"

namespace memtrail::live {
class client;
}

namespace memtrail::viewer {

struct live_status {
    enum class phase { attaching, attached, exited, detached, failed };
    phase now = phase::attaching;
    pid_t pid = 0;
    uint64_t events_received = 0;  // trace entries the stream carried
    uint64_t events_missed = 0;    // entries the stream said it missed (it fell behind)
    uint64_t restarts = 0;         // times it fell behind and sent a full snapshot instead
    uint64_t states_shown = 0;     // documents made so far
    // Entries received after the latest document's cut (it shows the state before them).
    uint64_t events_after_shown = 0;
    std::string error;  // failed: why (cannot attach, a broken stream)
};

// One line for the user: "attached to process 42: 1,234 events received", with what was
// missed, or "process 42 exited: showing the last state received", ...
std::string live_status_line(const live_status& status);

class live_session {
  public:
    struct options {
        analysis::frame_visibility frames = analysis::frame_visibility::user_frames;
        // The endpoint folder (live::endpoint_folder(geteuid()) when unset).
        std::optional<std::filesystem::path> folder;
        // How often the allocator's state is asked for, and a document made.
        std::chrono::milliseconds refresh{500};
    };
    // Starts attaching to `pid` in the background; status() says how it goes.
    live_session(pid_t pid, options how);
    // Detaches and waits for the threads.
    ~live_session();
    live_session(const live_session&) = delete;
    live_session& operator=(const live_session&) = delete;

    pid_t pid() const { return pid_; }
    live_status status() const;
    // Attaching or attached: more documents may come.
    bool following() const;
    // The latest document and what it was made from, every frame kept (what File > Save
    // received writes); nullptr and number 0 before the first, each new one numbered higher.
    struct latest_state {
        std::shared_ptr<const document> doc;
        std::shared_ptr<const snapshot::snapshot> recording;
        uint64_t number = 0;
    };
    latest_state latest() const;
    // Closes both connections; the latest document stays.
    void detach();

  private:
    // A frame of the event stream, decoded by the events thread, for the session thread.
    struct arrived_frame {
        live::frame header;                        // its kind and fields (payload moved out)
        std::optional<snapshot::snapshot> events;  // events and snapshot frames: their content
    };
    void follow();          // the session thread: attach, then a state and a document per refresh
    void receive_events();  // the events thread
    // The session thread: waits until the stream has brought every event up to `ends`, then
    // appends what arrived to trace_; false when the stream ended before (or detach()).
    bool take_arrived(const std::vector<uint64_t>& ends);
    void publish(snapshot::snapshot recording, std::vector<uint64_t> ends);
    // Ends following: `phase` (detached when detach() was called), the events thread told.
    void finish(live_status::phase phase, std::string error = {});
    void finish_locked(live_status::phase phase, std::string error);

    pid_t pid_;
    options how_;
    std::string name_;  // the documents' name: the command and pid
    mutable std::mutex mutex_;
    std::condition_variable changed_;
    bool stop_ = false;
    bool stream_ended_ = false;
    std::string stream_error_;  // why the event stream ended, when not at the process's exit
    std::deque<arrived_frame> arrived_;   // decoded, not yet in trace_
    std::vector<uint64_t> arrived_ends_;  // by device: after the last entry that arrived
    uint64_t events_arrived_ = 0;         // entries the stream carried since attaching
    live_trace trace_;                    // the session thread's alone
    live_status status_;
    std::unique_ptr<live::client> state_connection_;
    std::unique_ptr<live::client> event_connection_;
    std::shared_ptr<const document> document_;
    std::shared_ptr<const snapshot::snapshot> recording_;
    uint64_t generation_ = 0;
    std::vector<uint64_t> shown_ends_;  // the latest document's cut, by device
    std::thread events_thread_;
    std::thread session_thread_;
};

/// Writes what an attached viewer received: a PyTorch pickle when `path` ends in ".pickle",
/// zstd-compressed memtrail when it ends in ".zst", else memtrail's format.
/// @throws std::system_error "PATH: what failed" when it cannot be written.
void save_received(const snapshot::snapshot& recording, const std::filesystem::path& path);

}  // namespace memtrail::viewer

#pragma once
// The client side of the attach protocol: finds a process's endpoint by pid, connects, and
// requests snapshots or subscribes to its events (docs/live.md).

#include <sys/types.h>

#include <cstdint>
#include <filesystem>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "memtrail/live/protocol.hpp"

namespace memtrail::live {

// A process that cannot be attached to; the message says why (no such process, not recording
// with memtrail, another user's, a stale socket, refused).
class attach_error : public std::runtime_error {
  public:
    using std::runtime_error::runtime_error;
};

class client {
  public:
    /// Connects to process `pid`'s endpoint in `folder` (endpoint_folder(geteuid()) by default)
    /// and reads its greeting.
    /// @throws attach_error saying why it cannot attach.
    explicit client(pid_t pid, std::optional<std::filesystem::path> folder = std::nullopt);
    ~client();
    client(const client&) = delete;
    client& operator=(const client&) = delete;

    pid_t pid() const { return pid_; }
    int device_count() const { return device_count_; }

    // Whether a snapshot holds the history (full) or the allocator's state only (state: segments,
    // blocks with their stacks, statistics; cheap to take every second).
    enum class contents { full, state };
    /// A snapshot taken now: its frame ("snapshot", ends= each device's trace end, outside= what
    /// each holds outside the allocator when known, payload the msgpack snapshot).
    /// @throws attach_error when the process exited or refused; protocol_error.
    frame take_snapshot(contents what);

    /// Asks for every event from `from` (one sequence number per device) on; frames then come
    /// from next_frame() until the process exits.
    /// @throws attach_error when the process has exited.
    void subscribe(const std::vector<uint64_t>& from);
    // The next frame of a subscription; nullopt when the process exited (or closed the stream).
    /// @throws attach_error for an error frame; protocol_error.
    std::optional<frame> next_frame();

    // Ends the connection from any thread: a next_frame() waiting in another returns nullopt.
    void detach();

  private:
    void request(const std::string& line);
    pid_t pid_;
    int fd_ = -1;
    int device_count_ = 0;
    std::optional<frame_reader> reader_;
};

}  // namespace memtrail::live

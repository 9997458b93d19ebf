#pragma once
// The attach protocol's framing (docs/live.md), version 1. The client sends request lines; the
// endpoint answers with frames, each a header line "KIND key=value ... bytes=N" and N bytes of
// payload. Every send is MSG_NOSIGNAL: a peer gone mid-stream is an error of that call, never a
// SIGPIPE in the recording process.

#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace memtrail::live {

inline constexpr int protocol_version = 1;
// The endpoint's first line: "memtrail-live 1 pid=123 devices=1".
inline constexpr std::string_view greeting_word = "memtrail-live";

struct frame {
    std::string kind;                           // snapshot, events, behind, error, hello
    std::map<std::string, std::string> fields;  // the header's key=value pairs
    std::vector<uint8_t> payload;

    // The field as a whole number. @throws protocol_error when missing or not one.
    uint64_t number(std::string_view key) const;
    // "1,2,3" as numbers. @throws protocol_error.
    std::vector<uint64_t> numbers(std::string_view key) const;
    std::string text() const { return {payload.begin(), payload.end()}; }
};

class protocol_error : public std::runtime_error {
  public:
    using std::runtime_error::runtime_error;
};

// Sends all of `bytes`. Returns false when the peer is gone (or the socket failed).
bool send_all(int fd, std::span<const uint8_t> bytes);
bool send_text(int fd, std::string_view text);
// Sends a frame; `fields` without bytes=, which is added. Returns false when the peer is gone.
bool send_frame(int fd, std::string_view kind, std::string_view fields,
                std::span<const uint8_t> payload);

// Reads lines and frames from a socket, buffered.
class frame_reader {
  public:
    explicit frame_reader(int fd) : fd_(fd) {}
    // The next line without its newline; nullopt at the end of the stream.
    /// @throws protocol_error for a line longer than `longest`; std::system_error on a read error.
    std::optional<std::string> read_line(size_t longest);
    // The next frame; nullopt at the end of the stream (between frames).
    /// @throws protocol_error for a malformed header or a stream that ends inside a frame.
    std::optional<frame> read_frame();

  private:
    // Reads more into buffer_; false at the end of the stream.
    bool fill();
    int fd_;
    std::vector<char> buffer_;
    size_t start_ = 0;  // where unread bytes begin in buffer_
};

// Parses a header line "KIND k=v k=v". @throws protocol_error.
frame parse_header(std::string_view line);

}  // namespace memtrail::live

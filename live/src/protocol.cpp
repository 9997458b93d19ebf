#include "memtrail/live/protocol.hpp"

#include <sys/socket.h>

#include <cerrno>
#include <charconv>
#include <system_error>

namespace memtrail::live {

namespace {

// The longest header line a frame may have.
constexpr size_t longest_header = 4096;
// The largest payload a client accepts: a snapshot of a long recording is large, but not this.
constexpr uint64_t largest_payload = uint64_t{64} << 30;

bool parse_number(std::string_view text, uint64_t& out) {
    const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), out);
    return error == std::errc() && end == text.data() + text.size() && !text.empty();
}

}  // namespace

uint64_t frame::number(std::string_view key) const {
    const auto found = fields.find(std::string(key));
    uint64_t value = 0;
    if (found == fields.end() || !parse_number(found->second, value)) {
        throw protocol_error("the endpoint's '" + kind + "' frame has no number " +
                             std::string(key) + "=");
    }
    return value;
}

std::vector<uint64_t> frame::numbers(std::string_view key) const {
    const auto found = fields.find(std::string(key));
    if (found == fields.end()) {
        throw protocol_error("the endpoint's '" + kind + "' frame has no " + std::string(key) +
                             "=");
    }
    std::vector<uint64_t> values;
    std::string_view rest = found->second;
    while (!rest.empty()) {
        const size_t comma = rest.find(',');
        uint64_t value = 0;
        if (!parse_number(rest.substr(0, comma), value)) {
            throw protocol_error("the endpoint's " + std::string(key) + "=" + found->second +
                                 " is not a list of numbers");
        }
        values.push_back(value);
        rest = comma == std::string_view::npos ? std::string_view() : rest.substr(comma + 1);
    }
    return values;
}

bool send_all(int fd, std::span<const uint8_t> bytes) {
    while (!bytes.empty()) {
        const ssize_t sent = ::send(fd, bytes.data(), bytes.size(), MSG_NOSIGNAL);
        if (sent < 0) {
            if (errno == EINTR) {
                continue;
            }
            return false;
        }
        bytes = bytes.subspan(static_cast<size_t>(sent));
    }
    return true;
}

bool send_text(int fd, std::string_view text) {
    return send_all(fd, {reinterpret_cast<const uint8_t*>(text.data()), text.size()});
}

bool send_frame(int fd, std::string_view kind, std::string_view fields,
                std::span<const uint8_t> payload) {
    std::string header(kind);
    if (!fields.empty()) {
        header += ' ';
        header += fields;
    }
    header += " bytes=" + std::to_string(payload.size()) + "\n";
    return send_text(fd, header) && send_all(fd, payload);
}

frame parse_header(std::string_view line) {
    frame out;
    size_t position = 0;
    while (position < line.size()) {
        const size_t space = line.find(' ', position);
        const std::string_view word = line.substr(position, space - position);
        position = space == std::string_view::npos ? line.size() : space + 1;
        if (word.empty()) {
            continue;
        }
        if (out.kind.empty()) {
            out.kind = word;
            continue;
        }
        const size_t equals = word.find('=');
        if (equals == std::string_view::npos || equals == 0) {
            throw protocol_error("the endpoint sent a malformed header: " +
                                 std::string(line.substr(0, 200)));
        }
        out.fields[std::string(word.substr(0, equals))] = word.substr(equals + 1);
    }
    if (out.kind.empty()) {
        throw protocol_error("the endpoint sent an empty header line");
    }
    return out;
}

bool frame_reader::fill() {
    if (start_ > 0) {
        buffer_.erase(buffer_.begin(), buffer_.begin() + static_cast<ptrdiff_t>(start_));
        start_ = 0;
    }
    const size_t old_size = buffer_.size();
    buffer_.resize(old_size + 65536);
    for (;;) {
        const ssize_t got = ::recv(fd_, buffer_.data() + old_size, 65536, 0);
        if (got < 0 && errno == EINTR) {
            continue;
        }
        if (got < 0) {
            const int error = errno;
            buffer_.resize(old_size);
            // A peer that ended without closing cleanly is the end of its stream.
            if (error == ECONNRESET) {
                return false;
            }
            throw std::system_error(error, std::generic_category(), "attach socket");
        }
        buffer_.resize(old_size + static_cast<size_t>(got));
        return got > 0;
    }
}

std::optional<std::string> frame_reader::read_line(size_t longest) {
    size_t searched = start_;
    for (;;) {
        for (size_t i = searched; i < buffer_.size(); ++i) {
            if (buffer_[i] == '\n') {
                std::string line(buffer_.data() + start_, i - start_);
                start_ = i + 1;
                return line;
            }
        }
        if (buffer_.size() - start_ > longest) {
            throw protocol_error("a line of the attach protocol is longer than " +
                                 std::to_string(longest) + " bytes");
        }
        searched = buffer_.size() - start_;  // searched already; fill() moves them to the front
        if (!fill()) {
            if (buffer_.size() != start_) {
                throw protocol_error("the attach stream ended inside a line");
            }
            return std::nullopt;
        }
    }
}

std::optional<frame> frame_reader::read_frame() {
    const std::optional<std::string> line = read_line(longest_header);
    if (!line) {
        return std::nullopt;
    }
    frame out = parse_header(*line);
    const uint64_t size = out.number("bytes");
    if (size > largest_payload) {
        throw protocol_error("the endpoint announced a payload of " + std::to_string(size) +
                             " bytes, more than the 64 GiB accepted");
    }
    out.payload.reserve(size);
    while (out.payload.size() < size) {
        if (start_ == buffer_.size() && !fill()) {
            throw protocol_error("the attach stream ended inside a '" + out.kind +
                                 "' frame (the process exited or closed it)");
        }
        const size_t take = std::min<size_t>(size - out.payload.size(), buffer_.size() - start_);
        out.payload.insert(out.payload.end(), buffer_.begin() + static_cast<ptrdiff_t>(start_),
                           buffer_.begin() + static_cast<ptrdiff_t>(start_ + take));
        start_ += take;
    }
    return out;
}

}  // namespace memtrail::live

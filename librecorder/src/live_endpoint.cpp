// [SECTION] state shared by the endpoint's threads
// [SECTION] one client: peer check, requests, the event stream
// [SECTION] the listening socket, exit and fork

#include "detail/live_endpoint.hpp"

#include <poll.h>
#include <pthread.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <filesystem>
#include <optional>
#include <string>
#include <system_error>
#include <thread>
#include <vector>

#include "detail/fork_gate.hpp"
#include "memtrail/live/endpoint_folder.hpp"
#include "memtrail/live/protocol.hpp"
#include "memtrail/snapshot/msgpack_format.hpp"
#include "memtrail/stacks/symbol_cache.hpp"

namespace memtrail::recorder::librecorder {

namespace {

// ==== [SECTION] state shared by the endpoint's threads =======================================

recorder* history = nullptr;
int listening_fd = -1;
pid_t owner_pid = 0;                  // the process whose socket `socket_path` is
std::array<char, 108> socket_path{};  // fixed storage: read at exit and in a forked child
// Connected clients' sockets, so that a forked child closes its copies: a client must see the
// end of its stream when the process it attached to exits, not when its children do.
constexpr size_t most_clients = 64;
// Each holds a socket plus one; 0 is a free slot.
std::array<std::atomic<int>, most_clients> client_fds{};

// Entries an event frame carries at most: a batch is copied and encoded while the allocator
// goes on; a subscriber that cannot keep up falls behind the ring and is resynchronised.
constexpr size_t events_per_frame = 16384;
// How long a subscriber's thread waits when no event is new.
constexpr int idle_poll_ms = 50;
// The longest request line.
constexpr size_t longest_request = 256;

bool claim_client_slot(int fd) {
    for (auto& slot : client_fds) {
        int expected = 0;
        if (slot.compare_exchange_strong(expected, fd + 1)) {
            return true;
        }
    }
    return false;
}

void release_client_slot(int fd) {
    for (auto& slot : client_fds) {
        int expected = fd + 1;
        if (slot.compare_exchange_strong(expected, 0)) {
            return;
        }
    }
}

std::string joined(const std::vector<uint64_t>& numbers) {
    std::string text;
    for (const uint64_t n : numbers) {
        text += (text.empty() ? "" : ",") + std::to_string(n);
    }
    return text;
}

// ==== [SECTION] one client: peer check, requests, the event stream ===========================

bool send_error(int fd, const std::string& message) {
    return live::send_frame(fd, "error", "",
                            {reinterpret_cast<const uint8_t*>(message.data()), message.size()});
}

// What the device holds outside the allocator: total - free - reserved, read when reserved
// stays the same across reading free memory (another thread allocates meanwhile otherwise);
// nullopt when the device reports no total or reserved memory kept changing.
std::optional<uint64_t> outside_allocator(device_allocator& allocator) {
    for (int attempt = 0; attempt < 8; ++attempt) {
        const auto reserved = [&allocator] {
            return static_cast<uint64_t>(
                allocator.stats()
                    .reserved_bytes[static_cast<size_t>(stat_type::aggregate)]
                    .current);
        };
        const uint64_t before = reserved();
        const memory_info memory = allocator.get_device().get_memory_info();
        if (reserved() == before) {
            if (memory.total == 0 || memory.total < memory.free + before) {
                return std::nullopt;
            }
            return memory.total - memory.free - before;
        }
    }
    return std::nullopt;
}

// Sends a snapshot taken now; its trace ends go to `ends`, and with them, when every device
// tells, what each holds outside the allocator (outside=). False when the client is gone.
bool send_snapshot(int fd, recorder::snapshot_contents contents, std::vector<uint64_t>& ends,
                   detail::symbol_cache& symbols) {
    std::vector<uint8_t> bytes;
    std::vector<uint64_t> outside;
    {
        const fork_gate_scope gate;
        bytes = snapshot::write_snapshot(history->take_snapshot(contents, &ends, &symbols));
        for (int d = 0; d < history->allocator().device_count(); ++d) {
            if (const auto held = outside_allocator(history->allocator().on(d))) {
                outside.push_back(*held);
            }
        }
    }
    std::string fields = "ends=" + joined(ends);
    if (outside.size() == ends.size()) {
        fields += " outside=" + joined(outside);
    }
    return live::send_frame(fd, "snapshot", fields, bytes);
}

// Whether the client closed its end (it sends nothing more once subscribed).
bool client_left(int fd, int wait_ms) {
    pollfd readable{fd, POLLIN, 0};
    if (::poll(&readable, 1, wait_ms) <= 0) {
        return false;
    }
    char byte = 0;
    return ::recv(fd, &byte, 1, MSG_DONTWAIT) == 0 || (readable.revents & (POLLERR | POLLHUP));
}

// Streams every device's events from `cursors` on until the client leaves. A client the ring
// overtook is told how many entries it missed and gets a full snapshot to start again from.
void stream_events(int fd, std::vector<uint64_t> cursors, detail::symbol_cache& symbols) {
    cursors.resize(static_cast<size_t>(history->allocator().device_count()), 0);
    for (;;) {
        bool sent_any = false;
        for (size_t d = 0; d < cursors.size(); ++d) {
            recorder::trace_events batch;
            {
                const fork_gate_scope gate;
                batch = history->take_events(static_cast<int>(d), cursors[d], events_per_frame,
                                             &symbols);
            }
            if (batch.missed != 0) {
                const std::string fields =
                    "device=" + std::to_string(d) + " missed=" + std::to_string(batch.missed);
                if (!live::send_frame(fd, "behind", fields, {}) ||
                    !send_snapshot(fd, recorder::snapshot_contents::full, cursors, symbols)) {
                    return;
                }
                sent_any = true;
                break;
            }
            const auto& entries = batch.events.trace_for(static_cast<int>(d)).entries;
            if (entries.empty()) {
                continue;
            }
            const std::string fields =
                "device=" + std::to_string(d) + " from=" + std::to_string(cursors[d]) +
                " next=" + std::to_string(batch.next) + " count=" + std::to_string(entries.size());
            if (!live::send_frame(fd, "events", fields, snapshot::write_snapshot(batch.events))) {
                return;
            }
            cursors[d] = batch.next;
            sent_any = true;
        }
        if (client_left(fd, sent_any ? 0 : idle_poll_ms)) {
            return;
        }
    }
}

// Answers one request line; false when the connection should end. `symbols`: the connection's,
// so that each request symbolizes only what is new to it (and takes the GIL only for that).
bool answer(int fd, const std::string& line, detail::symbol_cache& symbols) {
    std::vector<uint64_t> ends;
    if (line == "snapshot full" || line == "snapshot state") {
        return send_snapshot(fd,
                             line == "snapshot full" ? recorder::snapshot_contents::full
                                                     : recorder::snapshot_contents::state,
                             ends, symbols);
    }
    if (line.starts_with("subscribe")) {
        std::vector<uint64_t> from;
        size_t position = std::strlen("subscribe");
        while (position < line.size()) {
            char* end = nullptr;
            const unsigned long long value = std::strtoull(line.c_str() + position, &end, 10);
            if (end == line.c_str() + position || (*end != ' ' && *end != '\0')) {
                return send_error(fd,
                                  "memtrail: 'subscribe' takes sequence numbers, one per "
                                  "device: " +
                                      line);
            }
            from.push_back(value);
            position = static_cast<size_t>(end - line.c_str());
        }
        stream_events(fd, from, symbols);
        return false;
    }
    return send_error(fd, "memtrail: unknown request '" + line.substr(0, 80) +
                              "' (expected: snapshot full, snapshot state, subscribe N...)");
}

void serve_client(int fd) {
    try {
        uid_t peer = 0;
        if (!live::peer_runs_as(fd, ::geteuid(), peer)) {
            send_error(fd, "memtrail: refused: process " + std::to_string(::getpid()) +
                               " belongs to uid " + std::to_string(::geteuid()) + ", not to uid " +
                               std::to_string(peer) + "; only its owner can attach");
        } else if (live::send_frame(fd, live::greeting_word,
                                    "version=" + std::to_string(live::protocol_version) +
                                        " pid=" + std::to_string(::getpid()) + " devices=" +
                                        std::to_string(history->allocator().device_count()),
                                    {})) {
            live::frame_reader reader(fd);
            detail::symbol_cache symbols;
            while (const std::optional<std::string> line = reader.read_line(longest_request)) {
                if (!answer(fd, *line, symbols)) {
                    break;
                }
            }
        }
    } catch (const std::exception& error) {
        send_error(fd, std::string("memtrail: the endpoint failed: ") + error.what());
    }
    release_client_slot(fd);
    ::close(fd);
}

// ==== [SECTION] the listening socket, exit and fork ==========================================

void accept_clients(int listening) {
    for (;;) {
        const int fd = ::accept4(listening, nullptr, nullptr, SOCK_CLOEXEC);
        if (fd < 0) {
            if (errno == EINTR || errno == ECONNABORTED) {
                continue;
            }
            return;  // closed (a forked child closed its copy) or broken
        }
        if (!claim_client_slot(fd)) {
            send_error(
                fd, "memtrail: " + std::to_string(most_clients) + " clients are attached already");
            ::close(fd);
            continue;
        }
        try {
            std::thread(serve_client, fd).detach();
        } catch (const std::system_error&) {
            release_client_slot(fd);
            ::close(fd);
        }
    }
}

void remove_socket_at_exit() {
    if (owner_pid == ::getpid() && socket_path[0] != '\0') {
        ::unlink(socket_path.data());
    }
}

void start_endpoint();

// The child's copies of its parent's sockets are closed; it opens an endpoint of its own.
void reopen_in_child() {
    if (history == nullptr) {
        return;
    }
    if (listening_fd >= 0) {
        ::close(listening_fd);
        listening_fd = -1;
    }
    for (auto& slot : client_fds) {
        const int held = slot.exchange(0);
        if (held != 0) {
            ::close(held - 1);
        }
    }
    socket_path[0] = '\0';
    start_endpoint();
}

void start_endpoint() {
    try {
        const uid_t user = ::geteuid();
        const std::filesystem::path folder = live::endpoint_folder(user);
        live::make_private_folder(folder, user);
        live::remove_dead_endpoints(folder);
        const std::string path = live::endpoint_path(folder, ::getpid()).string();
        if (path.size() >= socket_path.size()) {
            throw live::endpoint_error("memtrail: the endpoint path " + path + " is too long");
        }
        // A socket of this name was left by an earlier process with this pid that was killed.
        struct ::stat left {};
        if (::lstat(path.c_str(), &left) == 0 && S_ISSOCK(left.st_mode)) {
            ::unlink(path.c_str());
        }
        const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (fd < 0) {
            throw std::system_error(errno, std::generic_category(), "socket");
        }
        sockaddr_un address{};
        address.sun_family = AF_UNIX;
        std::strcpy(address.sun_path, path.c_str());
        if (::bind(fd, reinterpret_cast<const sockaddr*>(&address), sizeof(address)) != 0 ||
            ::chmod(path.c_str(), 0600) != 0 || ::listen(fd, 16) != 0) {
            const int error = errno;
            ::close(fd);
            throw std::system_error(error, std::generic_category(), path);
        }
        std::strcpy(socket_path.data(), path.c_str());
        owner_pid = ::getpid();
        listening_fd = fd;
        std::thread(accept_clients, fd).detach();
    } catch (const std::exception& error) {
        std::fprintf(stderr, "memtrail: no attach endpoint for process %d: %s\n",
                     static_cast<int>(::getpid()), error.what());
    }
}

}  // namespace

void open_live_endpoint(recorder& recorded) {
    history = &recorded;
    std::atexit(remove_socket_at_exit);
    ::pthread_atfork(nullptr, nullptr, reopen_in_child);
    start_endpoint();
}

}  // namespace memtrail::recorder::librecorder

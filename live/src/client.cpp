#include "memtrail/live/client.hpp"

#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <system_error>

#include "memtrail/live/endpoint_folder.hpp"

namespace memtrail::live {

namespace {

std::string process_name(pid_t pid) {
    return "process " + std::to_string(pid);
}

// Whether `pid` is a process that runs: not gone, and not a zombie waiting for its parent.
bool process_runs(pid_t pid) {
    if (::kill(pid, 0) != 0 && errno != EPERM) {
        return false;
    }
    std::FILE* status = std::fopen(("/proc/" + std::to_string(pid) + "/stat").c_str(), "r");
    if (status == nullptr) {
        return true;  // no /proc: kill's word stands
    }
    char state = '?';
    // "pid (command) S ...": the state follows the last ')'; a command may hold ')' itself.
    std::string line(512, '\0');
    const size_t read = std::fread(line.data(), 1, line.size(), status);
    std::fclose(status);
    line.resize(read);
    const size_t close = line.rfind(')');
    if (close != std::string::npos && close + 2 < line.size()) {
        state = line[close + 2];
    }
    return state != 'Z' && state != 'X';
}

// Why `pid` has no endpoint to connect to; `connect_error` is connect()'s errno.
[[noreturn]] void explain_no_endpoint(pid_t pid, const std::filesystem::path& socket,
                                      int connect_error) {
    const bool exists = process_runs(pid);
    struct stat info {};
    const bool owned_by_other = exists &&
                                ::stat(("/proc/" + std::to_string(pid)).c_str(), &info) == 0 &&
                                info.st_uid != ::geteuid();
    if (!exists) {
        if (connect_error == ECONNREFUSED) {
            ::unlink(socket.c_str());
            throw attach_error("there is no " + process_name(pid) + "; its endpoint " +
                               socket.string() +
                               " was stale (left by a process that was killed) and is removed");
        }
        throw attach_error("there is no " + process_name(pid));
    }
    if (owned_by_other) {
        throw attach_error("" + process_name(pid) + " belongs to another user (uid " +
                           std::to_string(info.st_uid) + "): only its owner can attach");
    }
    if (connect_error == ECONNREFUSED) {
        throw attach_error("the endpoint " + socket.string() + " is stale: " + process_name(pid) +
                           " does not listen on it (an earlier process with this pid left it)");
    }
    throw attach_error("" + process_name(pid) +
                       " is not recording with memtrail: it has no endpoint at " + socket.string() +
                       " (it needs librecorder: memtrail run, the Python package or a program "
                       "linked with it, with MEMTRAIL_LIVE not off)");
}

// The endpoint's messages start with "memtrail: ", as it prints them; ours add that where shown.
std::string without_prefix(std::string message) {
    constexpr std::string_view prefix = "memtrail: ";
    return message.starts_with(prefix) ? message.substr(prefix.size()) : message;
}

}  // namespace

client::client(pid_t pid, std::optional<std::filesystem::path> folder) : pid_(pid) {
    const std::filesystem::path where = folder ? *folder : endpoint_folder(::geteuid());
    const std::filesystem::path socket_path = endpoint_path(where, pid);
    struct stat folder_info {};
    if (::lstat(where.c_str(), &folder_info) != 0) {
        explain_no_endpoint(pid, socket_path, ENOENT);
    }
    try {
        check_private_folder(where, ::geteuid());
    } catch (const endpoint_error& error) {
        throw attach_error(error.what());
    }
    sockaddr_un address{};
    address.sun_family = AF_UNIX;
    if (socket_path.string().size() >= sizeof(address.sun_path)) {
        throw attach_error("the endpoint path " + socket_path.string() + " is too long");
    }
    std::strcpy(address.sun_path, socket_path.c_str());
    fd_ = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd_ < 0) {
        throw std::system_error(errno, std::generic_category(), "socket");
    }
    if (::connect(fd_, reinterpret_cast<const sockaddr*>(&address), sizeof(address)) != 0) {
        const int error = errno;
        ::close(fd_);
        fd_ = -1;
        explain_no_endpoint(pid, socket_path, error);
    }
    reader_.emplace(fd_);
    const std::optional<frame> hello = reader_->read_frame();
    if (!hello) {
        throw attach_error("" + process_name(pid) + " closed its endpoint at once");
    }
    if (hello->kind == "error") {
        throw attach_error(without_prefix(hello->text()));
    }
    if (hello->kind != greeting_word || hello->number("version") != protocol_version) {
        throw attach_error("" + process_name(pid) + " speaks another attach protocol (" +
                           hello->kind + " version " + hello->fields.at("version") +
                           "; this memtrail speaks version " + std::to_string(protocol_version) +
                           ")");
    }
    device_count_ = static_cast<int>(hello->number("devices"));
}

client::~client() {
    if (fd_ >= 0) {
        ::close(fd_);
    }
}

void client::request(const std::string& line) {
    if (!send_text(fd_, line + "\n")) {
        throw attach_error("" + process_name(pid_) + " has exited (" + std::strerror(errno) + ")");
    }
}

frame client::take_snapshot(contents what) {
    request(what == contents::full ? "snapshot full" : "snapshot state");
    std::optional<frame> reply = next_frame();
    if (!reply) {
        throw attach_error("" + process_name(pid_) + " exited before its snapshot was sent");
    }
    if (reply->kind != "snapshot") {
        throw protocol_error("the endpoint answered a snapshot request with '" + reply->kind + "'");
    }
    return std::move(*reply);
}

void client::subscribe(const std::vector<uint64_t>& from) {
    std::string line = "subscribe";
    for (const uint64_t sequence : from) {
        line += " " + std::to_string(sequence);
    }
    request(line);
}

void client::detach() {
    ::shutdown(fd_, SHUT_RDWR);
}

std::optional<frame> client::next_frame() {
    std::optional<frame> next = reader_->read_frame();
    if (next && next->kind == "error") {
        throw attach_error(without_prefix(next->text()));
    }
    return next;
}

}  // namespace memtrail::live

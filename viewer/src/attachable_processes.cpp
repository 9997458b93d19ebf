#include "memtrail/viewer/attachable_processes.hpp"

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>

#include "memtrail/live/endpoint_folder.hpp"

namespace memtrail::viewer {

std::string command_line_of(pid_t pid) {
    std::string text;
    const std::string path = "/proc/" + std::to_string(pid) + "/cmdline";
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        return text;
    }
    char buffer[4096];
    ssize_t got = 0;
    while ((got = ::read(fd, buffer, sizeof buffer)) > 0) {
        text.append(buffer, static_cast<size_t>(got));
    }
    ::close(fd);
    while (!text.empty() && text.back() == '\0') {
        text.pop_back();
    }
    std::replace(text.begin(), text.end(), '\0', ' ');
    return text;
}

std::vector<attachable_process> attachable_processes(const std::filesystem::path& folder) {
    std::error_code unreadable;
    if (!std::filesystem::exists(std::filesystem::symlink_status(folder, unreadable))) {
        return {};
    }
    live::check_private_folder(folder, ::geteuid());
    std::vector<attachable_process> found;
    for (const auto& item : std::filesystem::directory_iterator(folder)) {
        const std::string name = item.path().filename().string();
        pid_t pid = 0;
        const auto [end, error] = std::from_chars(name.data(), name.data() + name.size(), pid);
        if (error != std::errc() || std::string_view(end) != ".sock" || pid <= 0 ||
            pid == ::getpid()) {
            continue;
        }
        // A socket left by a killed process names a pid that no longer runs (or runs another
        // program, which then has no endpoint to answer: attaching says so).
        if (::kill(pid, 0) != 0 && errno == ESRCH) {
            continue;
        }
        found.push_back({pid, command_line_of(pid)});
    }
    std::sort(
        found.begin(), found.end(),
        [](const attachable_process& a, const attachable_process& b) { return a.pid < b.pid; });
    return found;
}

}  // namespace memtrail::viewer
